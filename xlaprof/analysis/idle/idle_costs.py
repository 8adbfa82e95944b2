"""Device idle time grouped by what caused it: (cause, user span, Python line).

Contract: ``cause_costs(workers)`` groups every gap piece of every worker by its cause, its user
span (``None`` outside any span) and its Python line (``PyStack.source`` of the piece's sampled
stack, ``None`` where none was sampled), and returns one ``CauseCost`` per group with the idle
time (device microseconds, summed over devices and workers), the number of pieces and the
costliest stack of the group (outermost frame first, down to the line). Unattributed pieces at
the window's edges that no stack explains form their own groups (``at_capture_edge``).
``worker_cost_groups(w)`` is one worker's share of it (what a task on a cluster sends back: its
``CostGroup``s, small frozen records that pickle) and ``merge_cost_groups(parts, labels)`` merges
those into the same ``CauseCost`` rows, each naming the workers (``labels``, in worker order) whose
pieces it holds.
``idle_by_line(costs)`` sums the groups that name a line over their spans: Python lines ranked by
the idle time they caused, per cause, largest first. ``one_per_line(costs)`` merges the groups of
one (cause, line) across spans into one ``CauseCost`` (the line a finding shows: the stacks', else
the span's own) (what a finding is: a line is fixed once,
whichever spans it ran in), named by its costliest span and stack (a span wins over none: time
outside any span at a line that also ran in one is most often in a span that the window's start
or end cut, whose event the profiler does not record), with ``spans``, the idle time
per span, as its breakdown, and the library lines ``inside`` merged; groups without a line stay
one per span (the span is all that names them).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np

from xlaprof.analysis.host.frames import PyStack, line_text
from xlaprof.analysis.idle.attribution import CAUSES, Cause

EDGE_SPAN = -2  # marks unattributed pieces at the capture's edges


@dataclass
class CauseCost:
    cause: Cause
    span: str | None
    span_source: str | None  # the span's own "file:line" (xlaprof.trace), None for xp.Trace spans
    source: str | None  # the Python line behind the pieces, from their stacks
    lost_us: float
    pieces: int
    stack: tuple[str, ...] = ()  # the costliest stack, outermost first, down to ``source``
    called_from: str | None = None  # the nearest frame above ``source`` in another file
    at_capture_edge: bool = False  # unattributed time at the window's edges with no stack
    inside: tuple = ()  # call_sites.LibraryLine: the library lines behind a cost grouped at the user's call
    spans: tuple[tuple[str | None, float], ...] = ()  # one_per_line: (span, idle us) per span, costliest first
    workers: tuple[str, ...] = ()  # the workers whose idle time it holds, in worker order
    in_data_loader: bool = False  # the costliest stack runs inside torch's DataLoader (PyStack.in_data_loader)
    torch_frame: str | None = None  # its innermost frame where torch's Python below ``source`` (PyStack.torch_frame)


@dataclass(frozen=True)
class CostGroup:
    """One worker's gap pieces of one (cause, span, line, at edge): what ``worker_cost_groups`` returns."""

    cause: Cause
    span: str | None
    span_source: str | None  # the span's own "file:line"
    source: str | None  # the Python line behind the pieces, from their stacks
    at_capture_edge: bool
    idle_us: float
    pieces: int
    stack_us: float  # the idle time of its costliest stack
    stack: PyStack | None  # its costliest stack; None where no piece had one

    @property
    def key(self) -> tuple:
        """What the workers' groups are merged by."""
        return self.cause, self.span, self.span_source, self.source, self.at_capture_edge


@dataclass
class LineIdle:
    source: str  # "file:line"
    code: str | None  # the line's text, when the file is readable here
    cause: Cause
    idle_us: float
    pieces: int
    stack: tuple[str, ...]
    called_from: str | None
    spans: list[str] = field(default_factory=list)  # the user spans it happened in


def cause_costs(workers) -> list[CauseCost]:
    return merge_cost_groups([worker_cost_groups(w) for w in workers], [w.worker.label for w in workers])


def merge_cost_groups(per_worker: list[list[CostGroup]], labels: list[str]) -> list[CauseCost]:
    """``CauseCost`` rows from the ``worker_cost_groups`` of each worker (in worker order, named by ``labels``)."""
    groups: dict[tuple, list] = defaultdict(lambda: [0.0, 0, -1.0, None, []])
    for label, rows in zip(labels, per_worker):
        for group in rows:
            entry = groups[group.key]
            entry[0] += group.idle_us
            entry[1] += group.pieces
            if group.stack_us > entry[2]:
                entry[2], entry[3] = group.stack_us, group.stack
            if label not in entry[4]:
                entry[4].append(label)
    costs = []
    for (cause, span, span_source, source, edge), (us, n, _, stack, workers) in groups.items():
        frames = stack.to_source if stack is not None else ()
        caller = stack.caller if stack is not None else None
        torch_frame = stack.torch_frame if stack is not None else None
        costs.append(CauseCost(cause, span, span_source, source, us, n, frames, caller, edge, workers=tuple(workers),
                               in_data_loader=stack is not None and stack.in_data_loader,
                               torch_frame=torch_frame.label if torch_frame else None))
    return costs


def worker_cost_groups(w) -> list[CostGroup]:
    """One worker's groups, small and picklable."""
    p = w.pieces
    if not len(p):
        return []
    stacks = w.host.stacks.stacks
    sources = sorted({s.source for s in stacks if s.source})
    source_id = {s: i for i, s in enumerate(sources)}
    of_stack = np.array([source_id.get(s.source, -1) for s in stacks] + [-1], np.int64)
    piece_source = of_stack[p.stack]  # -1 indexes the trailing "none"
    span = np.where(w.at_capture_edge(), EDGE_SPAN, p.span)
    keys = np.stack((p.cause.astype(np.int64), span, piece_source), axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    sums = np.bincount(inverse, weights=p.dur_us)
    counts = np.bincount(inverse)
    best_stack, best_us = _costliest_stack(inverse, p.stack, p.dur_us, len(stacks), uniq.shape[0])
    rows = []
    for g, (cause, span_id, src) in enumerate(uniq.tolist()):
        edge = span_id == EDGE_SPAN
        name, span_source = (None, None) if edge else w.host.spans.label(span_id)
        stack = stacks[best_stack[g]] if best_stack[g] >= 0 else None
        rows.append(CostGroup(CAUSES[cause], name, span_source, sources[src] if src >= 0 else None, edge,
                              float(sums[g]), int(counts[g]), float(best_us[g]), stack))
    return rows


def _costliest_stack(group: np.ndarray, stack: np.ndarray, dur: np.ndarray, n_stacks: int, n_groups: int):
    """Per group: the stack id holding most of its idle time (-1 for none), and that time."""
    pair = group * (n_stacks + 1) + (stack + 1)
    uniq, inverse = np.unique(pair, return_inverse=True)
    us = np.bincount(inverse.reshape(-1), weights=dur)
    owner, stack_id = uniq // (n_stacks + 1), uniq % (n_stacks + 1) - 1
    order = np.lexsort((-us, owner))
    first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
    best, best_us = np.full(n_groups, -1, np.int64), np.zeros(n_groups)
    best[owner[first]], best_us[owner[first]] = stack_id[first], us[first]
    return best, best_us


def idle_by_line(costs: list[CauseCost]) -> list[LineIdle]:
    lines: dict[tuple, LineIdle] = {}
    best: dict[tuple, float] = {}
    for cost in costs:
        if cost.source is None:
            continue
        key = (cost.source, cost.cause)
        row = lines.get(key)
        if row is None:
            row = lines[key] = LineIdle(cost.source, line_text(cost.source), cost.cause, 0.0, 0, cost.stack,
                                        cost.called_from)
            best[key] = cost.lost_us
        elif cost.lost_us > best[key]:
            row.stack, row.called_from, best[key] = cost.stack, cost.called_from, cost.lost_us
        row.idle_us += cost.lost_us
        row.pieces += cost.pieces
        if cost.span and cost.span not in row.spans:
            row.spans.append(cost.span)
    return sorted(lines.values(), key=lambda r: (-r.idle_us, r.source))


def one_per_line(costs: list[CauseCost]) -> list[CauseCost]:
    """See the contract: one cost per (cause, line, at edge), spans as its breakdown."""
    groups: dict[tuple, list[CauseCost]] = defaultdict(list)
    for cost in costs:
        # The line a finding shows: the stacks', else the span's own (a worker without stacks).
        groups[(cost.cause, cost.source or cost.span_source or ("span", cost.span), cost.at_capture_edge)].append(cost)
    merged = []
    for members in groups.values():
        members.sort(key=lambda c: -c.lost_us)
        spans: dict[str | None, float] = defaultdict(float)
        for member in members:
            spans[member.span] += member.lost_us
        workers = tuple(dict.fromkeys(w for member in members for w in member.workers))
        named = [span for span in spans if span is not None]
        merged.append(replace(members[0], span=max(named, key=spans.get) if named else None,
                              lost_us=sum(c.lost_us for c in members),
                              pieces=sum(c.pieces for c in members), inside=_merged_inside(members),
                              spans=tuple(sorted(spans.items(), key=lambda kv: -kv[1])), workers=workers))
    return merged


def _merged_inside(members: list[CauseCost]) -> tuple:
    """The library lines of several costs at one call site, one row per line, costliest first."""
    if len(members) == 1:
        return members[0].inside
    rows: dict[str, object] = {}
    for line in (line for member in members for line in member.inside):
        seen = rows.get(line.source)
        rows[line.source] = line if seen is None else replace(seen, pieces=seen.pieces + line.pieces,
                                                              lost_us=seen.lost_us + line.lost_us)
    return tuple(sorted(rows.values(), key=lambda line: -line.lost_us))

