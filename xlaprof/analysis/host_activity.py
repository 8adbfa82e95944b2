"""What the host was doing: transfers, compiles, graph tracing and user spans, from the host plane.

Contract: ``HostActivity.from_space(space)`` gathers, as sorted ``EventSet`` tables:
- ``transfers_from_device``: each TransferFromDevice, its interval extended back over the
  ``TensorCollectionBarrier`` that immediately precedes it on the same thread: a blocking read
  (``.item()``, ``print(t)``) first waits there for the device's pending work, then transfers.
  ``EventSet.rows`` still name the transfer events themselves.
- ``transfers_to_device``, ``compiles`` (graph-level ``XLAGraphExecutor::Compile`` with its
  ``graph_hash``; the backend compile where no graph-level event exists), ``tracing`` (the lazy
  tensor machinery and the user's spans: the host running the step's Python).
- ``spans``: the user spans (``SpanIndex``) and ``main_line``, the training loop's thread.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.span_index import SpanIndex
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import Plane
from xlaprof.xspace.reader import XSpaceData

# A barrier counts as part of a blocking read when the transfer starts this soon after it ends.
BARRIER_JOIN_US = 50.0


@dataclass
class EventSet:
    rows: np.ndarray  # int64: rows of the host plane's EventTable
    start: np.ndarray  # float64 us
    end: np.ndarray  # float64 us
    line: np.ndarray  # int32
    _max_end: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return int(self.rows.size)

    @property
    def total_us(self) -> float:
        return float(np.sum(self.end - self.start)) if len(self) else 0.0

    @staticmethod
    def of(plane: Plane | None, rows: np.ndarray) -> EventSet:
        if plane is None or rows.size == 0:
            z = np.zeros(0)
            return EventSet(np.zeros(0, np.int64), z, z, np.zeros(0, np.int32))
        ev = plane.events
        start = ev.start_us[rows]
        order = np.argsort(start, kind="stable")
        rows, start = rows[order], start[order]
        return EventSet(rows, start, start + ev.dur_us[rows], ev.line[rows])

    def concat(self, other: EventSet) -> EventSet:
        order = np.argsort(np.concatenate((self.start, other.start)), kind="stable")
        pick = lambda a, b: np.concatenate((a, b))[order]  # noqa: E731
        return EventSet(pick(self.rows, other.rows), pick(self.start, other.start),
                        pick(self.end, other.end), pick(self.line, other.line))

    def holding_all(self, times: np.ndarray) -> np.ndarray:
        """For each time, the index of the latest-starting event that holds it, or -1."""
        found = np.full(times.size, -1, np.int64)
        if not len(self):
            return found
        if self._max_end is None:
            self._max_end = np.maximum.accumulate(self.end)
        i = np.searchsorted(self.start, times, side="right") - 1
        live = np.arange(times.size)
        # Walk back from the last event starting before t while an earlier one may still be open.
        while live.size:
            at, t = i[live], times[live]
            open_before = (at >= 0) & (self._max_end[np.maximum(at, 0)] > t)
            holds = open_before & (self.end[np.maximum(at, 0)] > t)
            found[live[holds]] = at[holds]
            live = live[open_before & ~holds]
            i[live] -= 1
        return found


@dataclass
class HostActivity:
    plane: Plane | None
    transfers_from_device: EventSet
    transfers_to_device: EventSet
    compiles: EventSet
    compile_hashes: list[str | None]  # per compile, in EventSet order
    tracing: EventSet
    spans: SpanIndex
    main_line: int

    @staticmethod
    def from_space(space: XSpaceData) -> HostActivity:
        plane = space.plane(vocabulary.HOST_PLANE)
        spans = SpanIndex.from_plane(plane)
        if plane is None:
            empty = EventSet.of(None, np.zeros(0, np.int64))
            return HostActivity(None, empty, empty, empty, [], empty, spans, -1)
        tfd = _blocking_reads(plane, EventSet.of(plane, plane.rows_named(vocabulary.TRANSFER_FROM_DEVICE)))
        compile_rows = plane.rows_named(vocabulary.GRAPH_COMPILE)
        if compile_rows.size == 0:
            compile_rows = plane.rows_named(vocabulary.BACKEND_COMPILE)
        compiles = EventSet.of(plane, compile_rows)
        hashes = plane.stats.column(vocabulary.GRAPH_HASH_STAT)
        compile_hashes = [_hash(hashes.get(int(r))) for r in compiles.rows]
        span_rows = np.unique(np.concatenate((plane.rows_named(vocabulary.TRACING), spans.rows)))
        main_line = spans.busiest_line()
        if main_line < 0 and len(tfd):
            main_line = int(np.bincount(tfd.line).argmax())
        return HostActivity(plane, tfd, EventSet.of(plane, plane.rows_named(vocabulary.TRANSFER_TO_DEVICE)),
                            compiles, compile_hashes, EventSet.of(plane, span_rows), spans, main_line)

    def span_at(self, line: int, t: float) -> int:
        """The innermost user span at ``t`` on ``line`` (the main line when ``line`` < 0)."""
        return int(self.spans_at(np.array([line]), np.array([t], np.float64))[0])

    def spans_at(self, lines: np.ndarray, times: np.ndarray) -> np.ndarray:
        """``span_at`` for each (line, time) pair at once."""
        return self.spans.innermost_all(np.where(lines >= 0, lines, self.main_line), times)


def _blocking_reads(plane: Plane, tfd: EventSet) -> EventSet:
    barriers = EventSet.of(plane, plane.rows_named(vocabulary.SYNC_BARRIER))
    if not len(tfd) or not len(barriers):
        return tfd
    start = tfd.start.copy()
    # The barrier ending last before each transfer starts, on the same thread.
    ends_order = np.argsort(barriers.end, kind="stable")
    b_end, b_start, b_line = barriers.end[ends_order], barriers.start[ends_order], barriers.line[ends_order]
    idx = np.searchsorted(b_end, tfd.start, side="right") - 1
    for i, j in enumerate(idx):
        while j >= 0 and b_line[j] != tfd.line[i] and tfd.start[i] - b_end[j] <= BARRIER_JOIN_US:
            j -= 1
        if j >= 0 and b_line[j] == tfd.line[i] and tfd.start[i] - b_end[j] <= BARRIER_JOIN_US:
            start[i] = min(start[i], b_start[j])
    return EventSet(tfd.rows, start, tfd.end, tfd.line)


def _hash(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return str(value)
