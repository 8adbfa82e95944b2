"""Which compiled program each device execution ran, who dispatched it, and which compile made it.

Contract:
- ``program_executions(devices, host)`` returns ``ProgramExecutions``: one row per program run of
  every device, column-wise: device index, start, duration, ``program`` id (-1 where the capture
  does not say), ``dispatch_us``, when the host dispatched it (the latest dispatch event,
  ``vocabulary.DISPATCH``, starting before the execution; the execution's own start without one),
  ``span``, the innermost user span on the training thread then, and ``scheduled_us`` and
  ``scheduled_line``, when and on which host line the graph was queued for execution (torch_xla's
  ``vocabulary.SCHEDULE`` events, on the thread that synced, paired in order with the dispatches of
  its execution thread: a dispatch before every schedule not yet paired was queued before the
  capture; NaN and -1 where unknown), and ``by_sync``, whether an explicit sync queued it (its
  schedule inside a ``vocabulary.STEP_BOUNDARY`` event on its line: the step's graph). TPU/GPU: one
  run per module event (the events behind ``DeviceTimeline.rows``), named "<module>(<program id>)".
  CPU device: one run per PjRt execute (``vocabulary.CPU_PROGRAM_RUN_EVENTS``, as many as
  torch_xla's ``ExecuteTime`` count): its executor events, the nested executors of the intra-op
  pool's threads and the "(wait for completion)" event are parts of it, never runs of their own. A
  run lasts from its execute event to the next one; its start is its first busy moment, its duration
  the device's busy time in it (so the runs' durations add up to the busy time) and its program the
  ``program_id`` stat of its first op event. Busy time before the first recorded execute (a run
  already under way when the capture started) is one run more. Without execute events, each executor
  event is a run. A device none of whose runs names its program has no rows: nothing uses a run of
  an unknown program but through the device's other runs (``device_profile`` places an op in the run
  holding it), and on a TPU plane without a module line its busy events are its ops, millions of
  them, not program runs.
- ``compile_programs(starts, ends, executions)`` links each graph compile to the program it made:
  the program first executed soonest after the compile ended and before the next compile ended
  (a program is made by one compile, and torch_xla runs a new graph right after compiling it). Compiles whose program never ran in
  the window are paired, in order, with the recorded programs that never ran (``unrun``) when
  their numbers agree; otherwise they stay unlinked (``None``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.device.device_timeline import DeviceKind, DeviceTimeline
from xlaprof.analysis.host.host_activity import EventSet, HostActivity
from xlaprof.hlo import program_of
from xlaprof.xspace import vocabulary

UNKNOWN = -1


@dataclass
class ProgramExecutions:
    device: np.ndarray  # int32: index into the worker's device list
    start_us: np.ndarray  # float64
    dur_us: np.ndarray  # float64
    program: np.ndarray  # int64: program id, UNKNOWN where the capture does not say
    span: np.ndarray  # int64: dispatching user span (index into the host's SpanIndex), -1 where none
    dispatch_us: np.ndarray  # float64: when the host dispatched it
    scheduled_us: np.ndarray  # float64: when the syncing thread queued it, NaN where unknown
    scheduled_line: np.ndarray  # int32: that thread's host line, -1 where unknown
    by_sync: np.ndarray  # bool: queued by an explicit sync (torch_xla.sync(), xm.mark_step())

    def __len__(self) -> int:
        return int(self.start_us.size)

    def first_runs(self) -> dict[int, float]:
        """program id -> start of its first execution in the window."""
        known = self.program != UNKNOWN
        order = np.argsort(self.start_us[known], kind="stable")
        programs, starts = self.program[known][order], self.start_us[known][order]
        ids, first = np.unique(programs, return_index=True)
        return dict(zip(ids.tolist(), starts[first].tolist()))


def program_executions(devices: list[DeviceTimeline], host: HostActivity) -> ProgramExecutions:
    parts = []
    for d, device in enumerate(devices):
        found = _device_runs(device)
        if found is not None:
            start, dur, program = found
            parts.append((np.full(start.size, d, np.int32), start, dur, program))
    if not parts:
        z = np.zeros(0)
        return ProgramExecutions(np.zeros(0, np.int32), z, z, np.zeros(0, np.int64), np.zeros(0, np.int64), z, z,
                                 np.zeros(0, np.int32), np.zeros(0, bool))
    device, start, dur, program = (np.concatenate(c) for c in zip(*parts))
    del parts
    order = np.argsort(start, kind="stable")
    device, start, dur, program = device[order], start[order], dur[order], program[order]
    dispatch, scheduled_us, scheduled_line, by_sync = _dispatches(host, start)
    return ProgramExecutions(device, start, dur, program, host.spans_at(np.full(start.size, -1), dispatch), dispatch,
                             scheduled_us, scheduled_line, by_sync)


def _device_runs(device: DeviceTimeline) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(start, duration, program) of a device's runs, or None where no run's program is known."""
    plane, rows = device.plane, device.rows
    if device.kind is DeviceKind.CPU:
        runs = plane.rows_named(vocabulary.CPU_PROGRAM_RUN_EVENTS)
        if runs.size:
            start, dur, program = _cpu_runs(device, np.sort(plane.events.start_us[runs]))
        else:
            start, dur, program = plane.events.start_us[rows], plane.events.dur_us[rows], _cpu_programs(plane, rows)
    else:
        by_name = np.array([UNKNOWN if (p := program_of(n)) is None else p for n in plane.names] or [UNKNOWN],
                           np.int64)
        if (by_name == UNKNOWN).all():
            return None  # e.g. an op line, busy time without a module line: ops, not program runs
        program = by_name[plane.events.name[rows]]
        start, dur = plane.events.start_us[rows], plane.events.dur_us[rows]
    return None if (program == UNKNOWN).all() else (start, dur, program)


def _cpu_runs(device: DeviceTimeline, executes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, busy time, program) per program run of the CPU device, given its execute events' starts."""
    busy_starts, busy_ends = device.busy_starts, device.busy_ends
    if busy_starts.size and busy_starts[0] < executes[0]:
        executes = np.concatenate(([busy_starts[0]], executes))  # a run under way when the capture started
    bounds = np.append(executes, np.inf)
    before = intervals.measure_before(busy_starts, busy_ends, bounds)
    dur = np.diff(before)
    # A run's first busy moment: its execute's start when the device is busy then, else the next busy start.
    k = np.searchsorted(busy_starts, executes, side="right")
    busy_now = (k > 0) & (executes < busy_ends[np.maximum(k - 1, 0)]) if busy_starts.size else np.zeros(executes.size, bool)
    next_start = busy_starts[np.minimum(k, busy_starts.size - 1)] if busy_starts.size else executes
    start = np.where(busy_now | (k >= busy_starts.size) | (dur <= 0), executes, next_start)
    column = device.plane.int_column(vocabulary.PROGRAM_ID_STAT)
    program = np.full(executes.size, UNKNOWN, np.int64)
    if column.rows.size:
        op_start = device.plane.events.start_us[column.rows]
        order = np.argsort(op_start, kind="stable")
        op_start, op_program = op_start[order], column.values[order]
        first = np.searchsorted(op_start, executes, side="left")
        has = first < op_start.size
        has[has] &= op_start[first[has]] < bounds[1:][has]
        program[has] = op_program[first[has]]
    return start, dur, program


def _cpu_programs(plane, rows: np.ndarray) -> np.ndarray:
    """Per CPU execution, the program id of the first op event on its line inside it."""
    column = plane.int_column(vocabulary.PROGRAM_ID_STAT)
    program = np.full(rows.size, UNKNOWN, np.int64)
    if not column.rows.size:
        return program
    ev = plane.events
    op_line, op_start = ev.line[column.rows], ev.start_us[column.rows]
    exec_line, exec_start = ev.line[rows], ev.start_us[rows]
    exec_end = exec_start + ev.dur_us[rows]
    for line in np.unique(exec_line).tolist():
        mine = np.flatnonzero(exec_line == line)
        ops = np.flatnonzero(op_line == line)
        if not ops.size:
            continue
        ops = ops[np.argsort(op_start[ops], kind="stable")]
        at = np.searchsorted(op_start[ops], exec_start[mine], side="left")
        inside = at < ops.size
        hit = np.where(inside, ops[np.minimum(at, ops.size - 1)], 0)
        inside &= op_start[hit] < exec_end[mine]
        program[mine[inside]] = column.values[hit[inside]]
    return program


def _dispatches(host: HostActivity, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per execution starting at ``starts``: its dispatch time, when and on which line it was
    scheduled, and whether an explicit sync scheduled it."""
    n = starts.size
    unknown = starts.copy(), np.full(n, np.nan), np.full(n, -1, np.int32), np.zeros(n, bool)
    plane = host.plane
    if plane is None or not starts.size:
        return unknown
    dispatch = EventSet.of(plane, plane.rows_named(vocabulary.DISPATCH))
    if not len(dispatch):
        return unknown
    k = np.searchsorted(dispatch.start, starts, side="right") - 1
    known = k >= 0
    schedules = EventSet.of(plane, plane.rows_named(vocabulary.SCHEDULE))
    pick = np.where(known, _paired_schedules(dispatch, schedules)[np.maximum(k, 0)], -1)
    _, at, line, by_sync = unknown
    paired = pick >= 0
    at[paired], line[paired] = schedules.start[pick[paired]], schedules.line[pick[paired]]
    by_sync[paired] = _inside_syncs(plane, schedules)[pick[paired]]
    return np.where(known, dispatch.start[np.maximum(k, 0)], starts), at, line, by_sync


def _inside_syncs(plane, schedules: EventSet) -> np.ndarray:
    """Per schedule event, whether an explicit sync on its line holds it."""
    syncs = EventSet.of(plane, plane.rows_named(vocabulary.STEP_BOUNDARY))
    inside = np.zeros(len(schedules), bool)
    for line in np.unique(schedules.line).tolist():
        mine, on_line = schedules.line == line, syncs.line == line
        starts, ends = intervals.merge(syncs.start[on_line], syncs.end[on_line])
        inside[mine] = intervals.covering(starts, ends, schedules.start[mine]) >= 0
    return inside


def _paired_schedules(dispatch: EventSet, schedules: EventSet) -> np.ndarray:
    """Per dispatch (in order), the index of the schedule event it ran, or -1: the queue runs in order,
    so the n-th dispatch is the n-th schedule's, but a dispatch that starts before the next schedule not
    yet paired was queued before the capture began."""
    paired = np.full(len(dispatch), -1, np.int64)
    n = 0
    for i, at in enumerate(dispatch.start.tolist()):
        if n < len(schedules) and schedules.start[n] <= at:
            paired[i] = n
            n += 1
    return paired


def compile_programs(starts: np.ndarray, ends: np.ndarray, executions: ProgramExecutions,
                     unrun: list[int] = ()) -> list[int | None]:
    """Per compile (in the given order), the program id it made, or None."""
    first = sorted((t, p) for p, t in executions.first_runs().items())
    first_starts = np.array([t for t, _ in first])
    taken: set[int] = set()
    linked: list[int | None] = [None] * len(starts)
    order = np.argsort(starts, kind="stable").tolist()
    for n, i in enumerate(order):
        # A program first run after the next compile ended is that compile's.
        until = ends[order[n + 1]] if n + 1 < len(order) else np.inf
        k = int(np.searchsorted(first_starts, ends[i], side="left")) if first else 0
        while k < len(first) and first[k][1] in taken:
            k += 1
        if k < len(first) and first[k][0] < until:
            linked[i] = first[k][1]
            taken.add(first[k][1])
    missing = [i for i in order if linked[i] is None]
    spare = [p for p in unrun if p not in taken]
    if missing and len(missing) == len(spare):
        for i, program in zip(missing, sorted(spare)):
            linked[i] = program
    return linked
