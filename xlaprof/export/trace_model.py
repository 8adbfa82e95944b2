"""What an exported trace holds, independent of its file format: tracks, slices and instants.

Contract: ``trace_model(analysis)`` returns a ``TraceModel`` of the analysed session:
- per worker and capture plane, a process whose tracks are the plane's lines (device timelines,
  host threads with their runtime events and spans, and the sampled Python stacks' lines
  ``py <thread>``, whose slices carry their ``stack`` and are placed at their samples, as the
  analysis places them: ``python_stacks.sampled_times``): every event of the capture, once;
- per worker, an ``xlaprof <worker>`` process with xlaprof's own layer: per device a ``busy``
  track (the merged executions) and an ``idle`` track whose slices are the idle gap pieces,
  named by cause, with args ``cause``, ``span``, ``source`` (the Python line), ``stack`` and
  ``finding`` (the rank of the finding the piece is charged to, null where none); and a
  ``findings`` track with one instant per finding, at the start of its largest piece (a finding
  without pieces: at the window's start), with the finding's fields as args.
Times stay in microseconds on each worker's clock; slices are columnar (``SliceBlock``), never
a Python object per event, except where they carry args (gap pieces, Python stack runs).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from itertools import count

import numpy as np

from xlaprof.analysis import SessionAnalysis, WorkerAnalysis
from xlaprof.analysis.common import intervals
from xlaprof.analysis.findings.advice import FindingKind
from xlaprof.analysis.findings.findings import Finding
from xlaprof.analysis.host.python_stacks import ended_where_next_began, sampled_times
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import Plane, stat_text

BUSY = "busy"


@dataclass(frozen=True)
class TrackSpec:
    uuid: int
    name: str
    parent: int | None = None  # the process track's uuid; None for a process track itself
    pid: int | None = None  # a process track's pid


@dataclass
class SliceBlock:
    """The slices of one track, columnar."""

    track: int  # TrackSpec.uuid
    start_us: np.ndarray  # float64
    dur_us: np.ndarray  # float64
    name: np.ndarray  # int: index into names
    names: list[str]
    args: list[dict] | None = None  # one dict per slice where the slices carry args

    def __len__(self) -> int:
        return int(self.start_us.size)


@dataclass(frozen=True)
class Instant:
    track: int
    time_us: float
    name: str
    args: dict


@dataclass
class TraceModel:
    tracks: list[TrackSpec] = field(default_factory=list)
    blocks: list[SliceBlock] = field(default_factory=list)
    instants: list[Instant] = field(default_factory=list)

    @property
    def slice_count(self) -> int:
        return sum(len(b) for b in self.blocks)


def trace_model(analysis: SessionAnalysis) -> TraceModel:
    model = TraceModel()
    uuids = count(1)
    pids = count(1)
    places = [_piece_places(w) for w in analysis.workers]
    finding_of = _finding_of_groups(analysis.findings, analysis.workers, places)
    placed: dict[int, tuple[float, float, int]] = {}  # finding rank -> (its largest piece's us, start, track)
    first_track = None
    for w, (keys, args) in zip(analysis.workers, places):
        for plane in w.worker.space.planes:
            if len(plane.events):
                _add_plane(model, uuids, next(pids), f"{w.worker.label} {plane.name}", plane)
        process = _process(model, uuids, next(pids), f"xlaprof {w.worker.label}")
        findings_track = _track(model, uuids, process, "findings")
        first_track = first_track or (findings_track, w.window[0])
        for row, key in zip(args, keys):
            row["finding"] = finding_of.get(key)
        _add_devices(model, uuids, process, w, args)
        p = w.pieces
        for i, row in enumerate(args):
            rank = row["finding"]
            if rank is not None and p.dur_us[i] > placed.get(rank, (-1.0,))[0]:
                placed[rank] = (float(p.dur_us[i]), float(p.start_us[i]), findings_track)
    for rank, f in enumerate(analysis.findings, 1):
        _, time_us, track = placed.get(rank, (0.0, first_track[1], first_track[0]))
        model.instants.append(Instant(track, time_us, f"#{rank} {f.kind.value}", _finding_args(rank, f)))
    return model


def _process(model: TraceModel, uuids, pid: int, name: str) -> int:
    uuid = next(uuids)
    model.tracks.append(TrackSpec(uuid, name, pid=pid))
    return uuid


def _track(model: TraceModel, uuids, process: int, name: str) -> int:
    uuid = next(uuids)
    model.tracks.append(TrackSpec(uuid, name, parent=process))
    return uuid


def _add_plane(model: TraceModel, uuids, pid: int, name: str, plane: Plane) -> None:
    process = _process(model, uuids, pid, name)
    ev = plane.events
    stacks = plane.stats.column(vocabulary.PY_STACK_STAT)
    order = np.argsort(ev.line, kind="stable")
    bounds = np.searchsorted(ev.line[order], np.arange(len(plane.lines) + 1))
    seen: Counter[str] = Counter()
    for i, line in enumerate(plane.lines):
        rows = order[bounds[i]:bounds[i + 1]]
        if not rows.size:
            continue
        name = line.display_name or line.name
        seen[name] += 1  # lines of one name (two threads called "python") become "python", "python (2)"
        track = _track(model, uuids, process, name if seen[name] == 1 else f"{name} ({seen[name]})")
        sampled = stacks and int(rows[0]) in stacks  # a line of Python stack runs: each carries its stack
        if not sampled:
            model.blocks.append(SliceBlock(track, ev.start_us[rows], ev.dur_us[rows], ev.name[rows], plane.names))
            continue
        start, end = sampled_times(plane, rows)  # at their samples, not where the emitter recorded them
        by_start = np.argsort(start, kind="stable")
        rows, start = rows[by_start], start[by_start]
        end = ended_where_next_began(ev.line[rows], start, end[by_start])
        args = [{"stack": stat_text(stacks.get(int(r)))} for r in rows]
        model.blocks.append(SliceBlock(track, start, end - start, ev.name[rows], plane.names, args))


def _add_devices(model: TraceModel, uuids, process: int, w: WorkerAnalysis, args: list[dict]) -> None:
    p = w.pieces
    causes = [c.value for c in CAUSES]
    for d, device in enumerate(w.devices):
        busy = _track(model, uuids, process, f"{device.name} {BUSY}")
        starts, ends = intervals.clip(device.busy_starts, device.busy_ends, *w.window)
        model.blocks.append(SliceBlock(busy, starts, ends - starts, np.zeros(starts.size, np.int32), [BUSY]))
        idle = _track(model, uuids, process, f"{device.name} idle by cause")
        rows = np.flatnonzero(p.device == d)
        model.blocks.append(SliceBlock(idle, p.start_us[rows], p.dur_us[rows], p.cause[rows].astype(np.int32),
                                       causes, [args[i] for i in rows.tolist()]))


def _piece_places(w: WorkerAnalysis) -> tuple[list[tuple], list[dict]]:
    """Per gap piece: the key of the idle-cost group it belongs to (``analysis.idle_costs``: cause,
    span, the span's line, the stack's line, at the capture's edge), and its args."""
    p = w.pieces
    edge = w.at_capture_edge()
    stacks = w.host.stacks.stacks
    keys, args = [], []
    for i in range(len(p)):
        span, source, stack = w.piece_place(i)
        cause = CAUSES[p.cause[i]]
        span_source = w.host.spans.label(int(p.span[i]))[1]
        line = stacks[p.stack[i]].source if p.stack[i] >= 0 else None
        keys.append((cause, None, None, None, True) if edge[i] else (cause, span, span_source, line, False))
        args.append({"cause": cause.value, "span": span, "source": source, "stack": "\n".join(stack)})
    return keys, args


def _finding_of_groups(findings: list[Finding], workers: list[WorkerAnalysis],
                       places: list[tuple[list, list]]) -> dict[tuple, int]:
    """Each idle-cost group -> the rank (1 = first) of the finding made of it: the finding of its
    cause and line (the stack's, else the span's), whichever span it fell in (a finding is one cause
    at one line, its spans a breakdown); among findings alike (a cause with no line, one per span),
    the one of the group's span whose lost time is nearest the group's, summed over workers as
    ``idle_costs.cause_costs`` sums it."""
    lost: dict[tuple, float] = defaultdict(float)
    for w, (keys, _) in zip(workers, places):
        for key, us in zip(keys, w.pieces.dur_us.tolist()):
            lost[key] += us
    ranks: dict[tuple, list[int]] = defaultdict(list)
    for rank, f in enumerate(findings, 1):
        if f.kind.cause is not None and f.lost_us > 0:
            ranks[(f.kind.cause, f.source, f.kind is FindingKind.CAPTURE_EDGE)].append(rank)
    found = {}
    for key, us in sorted(lost.items(), key=lambda kv: -kv[1]):
        cause, span, span_source, line, edge = key
        candidates = ranks.get((cause, line or span_source, edge))
        if candidates:
            same_span = [r for r in candidates if findings[r - 1].span == span] or candidates
            found[key] = min(same_span, key=lambda r: abs(findings[r - 1].lost_us - us))
    return found


def _finding_args(rank: int, f: Finding) -> dict:
    return dict(asdict(f), finding=rank, kind=f.kind.value, stack="\n".join(f.stack))
