"""Per-step breakdown: for each training step, device busy time and idle time by cause.

Contract: ``step_table(devices, pieces, host, window)`` returns a ``StepTable`` with one row per step
span (``xlaprof.step`` or torch_xla's ``StepTrace``: host spans with a ``step_num``), ordered by
start; where the host has none, one per event of the first device plane's "Steps" line (TPU
captures; the event's name is its step number); where neither exists, steps inferred from the
training thread's explicit syncs (``torch_xla.sync()``, ``xm.mark_step()``, ``MpDeviceLoader``'s
own): a step runs from one sync's end to the next's, named ``step <k>``, numbered from 0 in the
window (a pod's workers, captured at once, number their steps alike). ``busy_us`` and ``idle_us[:, code]`` are summed
over the worker's devices (microseconds of device time, so a 4-chip host can show up to 4x the
step's wall time), with ``code`` indexing ``attribution.CAUSES``; ``rows()`` gives them as dicts (the JSON's and the
notebook's rows). Steps are clipped to the analysis ``window``: a step still running where the
recording ended (a host span closes just after the profiler's stop stamp) counts its part inside
the window, whose busy and idle time add up to its wall time; a step wholly outside has no row.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.device.device_timeline import DeviceKind, DeviceTimeline
from xlaprof.analysis.host.host_activity import HostActivity
from xlaprof.analysis.host.span_index import SpanIndex
from xlaprof.analysis.idle.attribution import CAUSES, GapPieces
from xlaprof.xspace import vocabulary


@dataclass
class StepTable:
    __repr__ = short_repr
    step: np.ndarray  # int64 step number
    name: list[str]
    start_us: np.ndarray
    end_us: np.ndarray
    busy_us: np.ndarray  # device busy time inside the step, summed over devices
    idle_us: np.ndarray  # (steps, len(CAUSES)) idle time by cause inside the step

    def __len__(self) -> int:
        return int(self.step.size)

    @property
    def wall_us(self) -> np.ndarray:
        return self.end_us - self.start_us

    def columns(self) -> dict:
        """The rows column-wise: step, name, start_us, wall_us, busy_us (lists) and
        idle_by_cause_us (cause -> its list)."""
        idle = self.idle_us.T.tolist() if len(self) else [[] for _ in CAUSES]
        return {"step": self.step.tolist(), "name": list(self.name), "start_us": self.start_us.tolist(),
                "wall_us": self.wall_us.tolist(), "busy_us": self.busy_us.tolist(),
                "idle_by_cause_us": {c.value: column for c, column in zip(CAUSES, idle)}}

    def rows(self) -> list[dict]:
        """One dict per step: step, name, start_us, wall_us, busy_us and idle_by_cause_us (cause -> us)."""
        columns = self.columns()
        idle = columns.pop("idle_by_cause_us")
        idle_rows = [dict(zip(idle, values)) for values in zip(*idle.values())]
        return [dict(zip(columns, values), idle_by_cause_us=by_cause)
                for values, by_cause in zip(zip(*columns.values()), idle_rows)]


def step_table(devices: list[DeviceTimeline], pieces: GapPieces, host: HostActivity,
               window: tuple[float, float]) -> StepTable:
    number, name, start, end = _host_steps(host.spans)
    if number.size == 0:
        number, name, start, end = _device_steps(devices)
    if number.size == 0:
        number, name, start, end = _sync_steps(host, window)
    start, end = np.maximum(start, window[0]), np.minimum(end, window[1])
    inside = np.flatnonzero(end > start)
    number, name, start, end = number[inside], [name[i] for i in inside], start[inside], end[inside]
    busy = np.zeros(number.size)
    idle = np.zeros((number.size, len(CAUSES)))
    for d, device in enumerate(devices):
        busy += intervals.measure_between(device.busy_starts, device.busy_ends, start, end)
        mine = pieces.device == d
        for code in range(len(CAUSES)):
            pick = mine & (pieces.cause == code)
            s = pieces.start_us[pick]
            idle[:, code] += intervals.measure_between(s, s + pieces.dur_us[pick], start, end)
    return StepTable(number, name, start, end, busy, idle)


def _host_steps(spans: SpanIndex) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    rows = np.flatnonzero((spans.step >= 0) & (spans.parent < 0)) if len(spans) else np.zeros(0, np.int64)
    rows = rows[np.argsort(spans.start[rows], kind="stable")]
    return spans.step[rows], [spans.name[i] for i in rows], spans.start[rows], spans.end[rows]


def _sync_steps(host: HostActivity, window: tuple[float, float]) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """Steps between the training thread's explicit syncs (see the contract)."""
    plane = host.plane
    if plane is None or host.main_line < 0:
        return np.zeros(0, np.int64), [], np.zeros(0), np.zeros(0)
    rows = plane.rows_named(vocabulary.STEP_BOUNDARY)
    rows = rows[plane.events.line[rows] == host.main_line]
    # One sync records nested boundary events (StepMarker around SyncLiveTensorsGraph): one boundary.
    _, ends = intervals.merge(plane.events.start_us[rows], plane.events.start_us[rows] + plane.events.dur_us[rows])
    ends = ends[(ends >= window[0]) & (ends <= window[1])]
    if ends.size < 2:
        return np.zeros(0, np.int64), [], np.zeros(0), np.zeros(0)
    number = np.arange(ends.size - 1, dtype=np.int64)
    return number, [f"step {k}" for k in number.tolist()], ends[:-1], ends[1:]


def _device_steps(devices: list[DeviceTimeline]) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    for device in devices:
        plane = device.plane
        line = next((i for i, ln in enumerate(plane.lines) if ln.name == vocabulary.STEPS_LINE), None)
        if line is None or device.kind is DeviceKind.CPU:
            continue
        rows = np.flatnonzero(plane.events.line == line)
        rows = rows[np.argsort(plane.events.start_us[rows], kind="stable")]
        if rows.size == 0:
            continue
        names = [plane.names[k] for k in plane.events.name[rows]]
        number = np.array([int(n) if n.isdigit() else i for i, n in enumerate(names)], np.int64)
        start = plane.events.start_us[rows]
        return number, names, start, start + plane.events.dur_us[rows]
    return np.zeros(0, np.int64), [], np.zeros(0), np.zeros(0)
