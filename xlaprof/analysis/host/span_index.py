"""User spans (``xlaprof.trace``, ``xlaprof.step``, torch_xla's ``xp.Trace``/``xp.StepTrace``) and
the lookup of the innermost one.

Contract: a user span is a host event carrying a ``source`` stat (``file:line``) or a
``step_num`` stat, or, on the lines of Python threads (``python_lines``), any event that is not
the runtime's own (``vocabulary.is_runtime_event``: torch_xla's, PJRT's and XLA's events, the
compiler's passes, the spans torch_xla's own Python opens such as ``cpu_loader.next``) nor inside a
runtime event (what runs inside the compiler's passes): that is how ``xp.Trace("reporting")`` and any other TraceMe the user's code records look. Such a span has no ``source`` of its own; the
analysis names its line from the Python stacks. ``SpanIndex.innermost_all(lines, times)`` returns, for each pair, the row
(into the index's own arrays) of the innermost span active on that host line at that time, or
-1. Spans on one thread nest properly, so the innermost is the latest-starting span still open.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import Plane, stat_text

NO_SPAN = "(no span)"  # the label of anything that happened outside every user span


@dataclass
class SpanIndex:
    __repr__ = short_repr
    rows: np.ndarray  # int64: the span's row in the host plane's EventTable
    name: list[str]  # span name, per span
    source: list[str | None]  # "file:line", per span
    step: np.ndarray  # int64 step number, -1 where the span is not a step
    line: np.ndarray  # int32 host line
    start: np.ndarray  # float64 us, sorted within each line
    end: np.ndarray  # float64 us
    parent: np.ndarray  # int64: the enclosing span on the same line, -1 at the top

    def __len__(self) -> int:
        return len(self.name)

    @staticmethod
    def from_plane(plane: Plane | None, python_lines: frozenset[int] = frozenset(),
                   passes: np.ndarray | None = None) -> SpanIndex:
        """``passes``: ``compiler_rows(plane, python_lines)``, where the caller has it already."""
        if plane is None:
            return _build(plane, np.zeros(0, np.int64), {}, {})
        sources = plane.stats.column(vocabulary.SOURCE_STAT)
        steps = plane.stats.column(vocabulary.STEP_NUM_STAT)
        if passes is None:
            passes = compiler_rows(plane, python_lines)
        rows = np.union1d(np.array(sorted(set(sources) | set(steps)), np.int64),
                          _user_tracemes(plane, python_lines, passes))
        return _build(plane, rows, sources, steps)

    def innermost_all(self, lines: np.ndarray, times: np.ndarray) -> np.ndarray:
        """For each (line, time) pair, the innermost span active there, or -1."""
        found = np.full(times.size, -1, np.int64)
        for line in np.unique(lines).tolist():
            lo, hi = self._line_range.get(int(line), (0, 0))
            if hi == lo:
                continue
            mine = np.flatnonzero(lines == line)
            i = np.searchsorted(self.start[lo:hi], times[mine], side="right") - 1 + lo
            live = np.arange(mine.size)
            # The latest span starting before t, or the nearest of its ancestors still open at t.
            while live.size:
                at = i[live]
                closed = (at >= lo) & (self.end[np.maximum(at, lo)] <= times[mine[live]])
                i[live[closed]] = self.parent[at[closed]]
                live = live[closed]
            found[mine] = np.where(i >= lo, i, -1)
        return found

    def label(self, i: int) -> tuple[str | None, str | None]:
        return (self.name[i], self.source[i]) if i >= 0 else (None, None)

    def busiest_line(self) -> int:
        """The host line where user spans cover the most time (the training loop's thread)."""
        if not len(self):
            return -1
        covered = np.bincount(self.line, weights=np.where(self.parent < 0, self.end - self.start, 0.0))
        return int(np.argmax(covered))

    def __post_init__(self) -> None:
        self._line_range: dict[int, tuple[int, int]] = {}
        if len(self):
            bounds = np.flatnonzero(np.diff(self.line)) + 1
            for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(self.line)]):
                self._line_range[int(self.line[lo])] = (int(lo), int(hi))


def _build(plane: Plane | None, rows: np.ndarray, sources: dict, steps: dict) -> SpanIndex:
    if plane is None or rows.size == 0:
        empty_f, empty_i = np.zeros(0), np.zeros(0, np.int64)
        return SpanIndex(empty_i, [], [], empty_i, np.zeros(0, np.int32), empty_f, empty_f, empty_i)
    ev = plane.events
    line, start = ev.line[rows], ev.start_us[rows]
    end = start + ev.dur_us[rows]
    # Sorted by line, then start; an enclosing span before the spans it encloses.
    order = np.lexsort((-end, start, line))
    rows, line, start, end = rows[order], line[order], start[order], end[order]
    parent = _open_parents(line, start, end)
    names = [plane.names[n] for n in ev.name[rows].tolist()]
    listed = rows.tolist()
    source = [stat_text(sources.get(r)) for r in listed]
    step = np.array([_int(steps.get(r)) for r in listed], np.int64)
    return SpanIndex(rows, names, source, step, line.astype(np.int32), start, end, parent)


def _open_parents(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per span (sorted by line, then start), the latest earlier span of its line still open when
    it starts (``end > start``), or -1: what a stack of open spans gives. Pointer jumping from the
    span before: a candidate that ended by then is replaced by its own pointer, since every span
    that pointer skips ended by the candidate's start, so by this span's too."""
    parent = np.arange(-1, line.size - 1, dtype=np.int64)
    if line.size:
        parent[np.r_[True, line[1:] != line[:-1]]] = -1
    live = np.flatnonzero(parent >= 0)
    while live.size:
        live = live[end[parent[live]] <= start[live]]
        parent[live] = parent[parent[live]]
        live = live[parent[live] >= 0]
    return parent


def _user_tracemes(plane: Plane, python_lines: frozenset[int], passes: np.ndarray) -> np.ndarray:
    """Rows of the events on Python threads' lines that the runtime did not record, outside the
    compiler's ``passes`` of a compile begun before the capture."""
    if not python_lines:
        return np.zeros(0, np.int64)
    user_names = np.array([i for i, n in enumerate(plane.names) if not vocabulary.is_runtime_event(n)], np.int32)
    if user_names.size == 0:
        return np.zeros(0, np.int64)
    ev = plane.events
    on_python = np.isin(ev.line, np.array(sorted(python_lines), np.int32))
    user = np.isin(ev.name, user_names)
    candidates, runtime = np.flatnonzero(on_python & user), np.flatnonzero(on_python & ~user)
    candidates = candidates[~_inside(ev, candidates, runtime)]
    if passes.size == 0:
        return candidates
    return candidates[~_inside(ev, candidates, passes, whole_lines=True)]


def compiler_rows(plane: Plane | None, python_lines: frozenset[int]) -> np.ndarray:
    """The XLA compiler's passes on Python threads outside any recorded compile: a compile that
    was already running when the capture started (its compile event began before the capture)."""
    if plane is None or not python_lines:
        return np.zeros(0, np.int64)
    ev = plane.events
    on_python = np.isin(ev.line, np.array(sorted(python_lines), np.int32))
    pass_ids = np.array([i for i, name in enumerate(plane.names) if vocabulary.is_compiler_pass(name)], np.int32)
    passes = np.flatnonzero(on_python & np.isin(ev.name, pass_ids))
    runtime = np.flatnonzero(on_python & np.isin(ev.name, plane.name_ids(
        vocabulary.GRAPH_COMPILE | vocabulary.BACKEND_COMPILE)))
    return passes[~_inside(ev, passes, runtime)]


def _inside(ev, rows: np.ndarray, enclosing: np.ndarray, whole_lines: bool = False) -> np.ndarray:
    """Which ``rows`` lie within an ``enclosing`` event of their line (``whole_lines``: within the
    extent of all of them on that line): the XLA compiler's passes ("dce", "Codegen") run inside
    a compile on the Python thread; a user's span never does."""
    inside = np.zeros(rows.size, bool)
    for line in np.unique(ev.line[rows]).tolist():
        mine = np.flatnonzero(ev.line[rows] == line)
        around = enclosing[ev.line[enclosing] == line]
        if around.size == 0:
            continue
        starts, ends = ev.start_us[around], ev.start_us[around] + ev.dur_us[around]
        if whole_lines:
            starts, ends = starts.min(keepdims=True), ends.max(keepdims=True)
        starts, ends = intervals.merge(starts, ends)
        s = ev.start_us[rows[mine]]
        k = intervals.covering(starts, ends, s)
        inside[mine] = (k >= 0) & (s + ev.dur_us[rows[mine]] <= ends[np.maximum(k, 0)])
    return inside


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1
