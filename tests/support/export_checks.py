"""What an exported trace must hold, checked against the session and its analysis: every event
of every line of every capture plane (start and end to the nanosecond; Python stack runs at their
samples), per device the busy time
and every idle gap piece with its cause, line, stack and finding, and one instant per finding.

``assert_export_matches(trace, analysis, tolerance_ns)`` takes a ``ReadTrace`` from
``tests.support.trace_readers`` (a reader independent of the exporter).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.xspace import vocabulary


def _ns(us) -> np.ndarray:
    return np.rint(np.asarray(us, np.float64) * 1000).astype(np.int64)


def _by_process(trace) -> dict[str, list[list[tuple]]]:
    processes = defaultdict(list)
    for track, slices in trace.slices.items():
        process, _ = track.split(" / ", 1)
        processes[process].append(slices)
    return processes


def _times(slices) -> np.ndarray:
    """(start, end) in ns of a track's slices, sorted."""
    rows = np.array(sorted((s[1], s[1] + s[2]) for s in slices), np.int64).reshape(-1, 2)
    return rows


def assert_export_matches(trace, analysis: SessionAnalysis, tolerance_ns: int = 1) -> None:
    assert trace.unclosed == 0 and trace.unmatched_ends == 0
    processes = _by_process(trace)
    charged: dict[int, tuple[float, int]] = {}  # finding rank -> (us, pieces) of the pieces naming it
    for w in analysis.workers:
        for plane in w.worker.space.planes:
            if not len(plane.events):
                continue
            expected = sorted(_line_times(plane, i).tolist() for i in range(len(plane.lines))
                              if (plane.events.line == i).any())
            got = sorted(_times(slices).tolist() for slices in processes[f"{w.worker.label} {plane.name}"])
            assert len(got) == len(expected), plane.name
            for g, e in zip(got, expected):
                assert len(g) == len(e)
                assert np.abs(np.array(g) - np.array(e)).max(initial=0) <= tolerance_ns, plane.name
        _assert_devices(trace, w, tolerance_ns, charged)
    for rank, f in enumerate(analysis.findings, 1):  # the pieces charged to a finding add up to its lost time
        if f.kind.cause is not None and f.lost_us > 0:
            us, pieces = charged.get(rank, (0.0, 0))
            assert abs(us - f.lost_us) <= tolerance_ns * max(pieces, 1) / 1000, (rank, f.kind, f.source, us, f.lost_us)
    findings = [i for track, items in trace.instants.items() for i in items]
    assert len(findings) == len(analysis.findings)
    assert sorted(i[2]["finding"] for i in findings) == list(range(1, len(analysis.findings) + 1))


def _line_times(plane, line: int) -> np.ndarray:
    """(start, end) in ns of a line's events, sorted; a line of Python stack runs (events carrying
    ``py_stack``) at its samples: each run from its event's start less its ``py_lag_us`` to its end,
    or to the next run's start where that came first."""
    ev, rows = plane.events, np.flatnonzero(plane.events.line == line)
    start, end = ev.start_us[rows], ev.start_us[rows] + ev.dur_us[rows]
    stacks, lags = plane.stats.column(vocabulary.PY_STACK_STAT), plane.stats.column(vocabulary.PY_LAG_STAT)
    if int(rows[0]) in stacks:
        start = start - np.array([max(float(lags.get(r, 0)), 0.0) for r in rows.tolist()])
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
        end[:-1] = np.minimum(end[:-1], np.maximum(start[1:], start[:-1]))
    return np.array(sorted(zip(_ns(start).tolist(), _ns(end).tolist())), np.int64).reshape(-1, 2)


def _assert_devices(trace, w, tolerance_ns: int, charged: dict[int, tuple[float, int]]) -> None:
    p = w.pieces
    for d, device in enumerate(w.devices):
        idle = sorted(trace.slices[f"xlaprof {w.worker.label} / {device.name} idle by cause"], key=lambda s: s[1])
        rows = np.flatnonzero(p.device == d)
        assert len(idle) == rows.size
        assert [s[0] for s in idle] == [CAUSES[c].value for c in p.cause[rows]]
        assert abs(sum(s[2] for s in idle) - float(p.dur_us[rows].sum()) * 1000) <= tolerance_ns * rows.size
        for s, i in zip(idle, rows.tolist()):
            span, source, stack = w.piece_place(i)
            assert s[3].get("source") == source and s[3].get("span") == span
            assert s[3].get("stack", "") == "\n".join(stack)
            if s[3].get("finding") is not None:
                us, pieces = charged.get(s[3]["finding"], (0.0, 0))
                charged[s[3]["finding"]] = (us + s[2] / 1000, pieces + 1)
        busy = trace.slices[f"xlaprof {w.worker.label} / {device.name} busy"]
        assert abs(sum(s[2] for s in busy) / 1000 - device.busy_us) < 1e-3 * max(1.0, device.busy_us) or \
            w.window[0] > device.busy_starts.min(initial=np.inf)  # busy is clipped to the window
