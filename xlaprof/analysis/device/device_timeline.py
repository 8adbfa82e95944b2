"""Device timelines: when each device was executing, from any capture layout.

Contract: ``device_timelines(space)`` returns one ``DeviceTimeline`` per device, ordered by name:
- TPU and GPU: each ``/device:TPU:N`` (or GPU) plane; busy time is its "XLA Modules" line
  (else "XLA Ops", else every non-derived line), merged.
- CPU XLA device (no accelerator planes): on the host plane, as one device ``CPU:0``, the PJRT
  CPU executable's execution events (``ThunkExecutor::Execute``, and its "(wait for completion)"
  form) united with the thunks they run (events carrying a ``program_id``): torch_xla 2.9 runs a
  program's first thunks inline before its executor event begins, so the executor events alone
  miss busy time (measured: a 4.3 ms dot before a 5 ms executor event). These rows make busy
  time only: one program run holds several of them (the executors of the intra-op pool's
  threads, the wait for completion), and ``analysis.programs`` counts the runs.
Busy intervals are merged, sorted, disjoint, in microseconds on the worker's clock, found a block
of events at a time (``events.SCAN_ROWS``): a timeline keeps its rows (4 bytes an execution
event) and its intervals, and needs no more than that and a block's temporaries to be made.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import SCAN_ROWS, Plane, row_dtype
from xlaprof.xspace.reader import XSpaceData


class DeviceKind(str, Enum):
    TPU = "TPU"
    GPU = "GPU"
    CPU = "CPU"  # torch_xla's CPU device: executions on the host plane


@dataclass
class DeviceTimeline:
    __repr__ = short_repr
    name: str  # "TPU:0", "GPU:1", "CPU:0"
    kind: DeviceKind
    plane: Plane
    rows: np.ndarray  # ``row_dtype``: the plane's execution events (on the CPU device, its thunks add busy time)
    busy_starts: np.ndarray  # float64 us, merged
    busy_ends: np.ndarray  # float64 us, merged

    @property
    def busy_us(self) -> float:
        return intervals.total(self.busy_starts, self.busy_ends)


def _timeline(name: str, kind: DeviceKind, plane: Plane, rows: np.ndarray,
              also_busy: np.ndarray | None = None) -> DeviceTimeline:
    busy = rows
    if also_busy is not None:  # the sorted union of both, without sorting them
        marked = np.zeros(len(plane.events), bool)
        marked[rows] = marked[also_busy] = True
        busy = np.flatnonzero(marked).astype(row_dtype(marked.size))
        del marked
    starts, ends = _busy(plane, busy)
    return DeviceTimeline(name, kind, plane, rows, starts, ends)


def _busy(plane: Plane, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The merged intervals of the events ``rows``, merged a block of ``SCAN_ROWS`` at a time and
    then together (the union of unions is the union: the same intervals, in bounded memory)."""
    ev = plane.events
    parts = []
    for lo in range(0, rows.size, SCAN_ROWS):
        block = rows[lo:lo + SCAN_ROWS]
        starts = ev.start_us[block]
        parts.append(intervals.merge(starts, starts + ev.dur_us[block]))
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return intervals.merge(np.zeros(0), np.zeros(0))
    starts = np.concatenate([s for s, _ in parts])
    ends = np.concatenate([e for _, e in parts])
    del parts
    return intervals.merge(starts, ends)


def _accelerator_rows(plane: Plane) -> np.ndarray:
    by_name = {line.name: i for i, line in enumerate(plane.lines)}
    for wanted in vocabulary.DEVICE_BUSY_LINES:
        if wanted in by_name:
            rows = plane.rows_on_lines([by_name[wanted]])
            if rows.size:
                return rows
    return plane.rows_on_lines(plane.line_ids_where(lambda n: n not in vocabulary.DEVICE_DERIVED_LINES))


def device_timelines(space: XSpaceData) -> list[DeviceTimeline]:
    timelines = []
    for plane in space.planes:
        match = vocabulary.DEVICE_PLANE.match(plane.name)
        if match:
            kind = DeviceKind(match.group("kind"))
            timelines.append(_timeline(f"{kind.value}:{match.group('index')}", kind, plane,
                                       _accelerator_rows(plane)))
    if timelines:
        return sorted(timelines, key=lambda t: (t.kind.value, int(t.name.split(":")[1])))
    host = space.plane(vocabulary.HOST_PLANE)
    if host is None:
        return []
    rows = host.rows_named(vocabulary.CPU_EXECUTION_EVENTS)
    if rows.size == 0:
        rows = host.rows_named(vocabulary.CPU_EXECUTION_FALLBACK_EVENTS)
    thunks = host.int_column(vocabulary.PROGRAM_ID_STAT).rows
    if rows.size == 0 and thunks.size == 0:
        return []
    return [_timeline(vocabulary.CPU_DEVICE_NAME, DeviceKind.CPU, host, rows, thunks)]
