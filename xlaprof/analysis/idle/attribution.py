"""Attribute every microsecond of device idle time to one cause and the user span behind it.

Contract: ``attribute(device, device_index, host, causes, window, reruns)`` splits the device's idle
gaps inside the window into ``GapPieces``, contiguous pieces each with exactly one ``Cause``; the
pieces of a device add up to its idle time. The rules:

1. What the host is doing decides, by priority when several things overlap:
   compile > transfer_from_device > transfer_to_device > host_tracing > host_blocked > unattributed.
   ``compile`` is torch_xla compiling a graph, and TorchDynamo compiling a Python frame into one
   (``torch.compile``: the training thread sampled inside its frame compiler, Python though it is).
   ``host_tracing`` is the host inside the lazy-tensor machinery or a user span, or, where the
   worker's sampler recorded the training loop thread's stacks, that thread running Python (its
   CPU clock advancing: the model's forward, backward, the optimizer's step, the user's loop),
   with or without a span; ``host_blocked`` is that thread blocked on a line outside torch_xla (a
   ``time.sleep``, a queue or DataLoader ``get``, file or socket I/O, a lock); ``unattributed`` is
   host time where nothing was recorded or sampled.
2. A gap that opens while the host is blocked in a read (a TransferFromDevice, with the barrier
   wait before it: ``.item()``, ``print(t)``) was caused by that read. Had the host not blocked,
   everything it did afterwards would have happened earlier by the time it spent blocked, so the
   gap would have been shorter by up to that much. Its first ``min(gap, blocked time)``
   microseconds go to ``transfer_from_device``, less the idle time inside the read's call before
   the gap opened (the read holds that already, by rule 1: in all a read is charged at most its
   blocked time); the rest of the gap follows rule 1. A compile
   inside the read (the graph the read needs, compiled first) is not the read's blocked time: it
   stays compile, by rule 1, and the read's share is its time outside compiles. Nor is the device
   time of a partial graph the read forced whose work later graphs run again (``reruns``, per read:
   ``read_reruns``): without the read the device would run that work once, so the host's wait for
   it is device time the read added, not idle time. A read on another Python thread (a logger's, a
   ``run_async`` step closure's) does not stop the training thread: rules 1 and 2 take it only for
   its thread's CPU time inside it, at its end (``HostActivity.reads_waited_for``).
3. Each piece names the innermost user span active on the host where its cause happened: the
   span around the compile or transfer event, or for tracing and unattributed time the span
   open on that thread (the training loop's thread) at the piece's middle, where rule 4 reads
   its stack too (so a piece's span and line name the same moment).
4. Each piece names the Python stack of the thread doing that host work (where the worker's
   sampler recorded stacks; a piece of tracing, blocked or unattributed time, named by a moment,
   never spans two of the training thread's sampled runs): for a compile or transfer, what the sampler first saw during that
   event (for a read, the whole reading call); for tracing, at the piece's middle on the tracing
   thread; for blocked and unattributed time, on the training loop's thread, except that a training
   thread waiting for another thread (a queue's get: ``MpDeviceLoader`` waiting for its loader) is
   named by a sampled thread working then on a line it can name (the loader's slow collate): the
   root of the wait (a loader thread itself waiting, for a DataLoader's worker processes, is none).
   A moment is named by ``HostActivity.moment_stacks``: after a blocking call returned, the thread
   ran the line the sampler saw next.
A blocking read here is the whole Python call that reads (``HostActivity.transfers_from_device``):
the forced early run of a partial graph, its tracing, sync and barrier wait belong to the read,
since without the read that partial graph would not run apart.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.device.device_timeline import DeviceTimeline
from xlaprof.analysis.host.host_activity import READ_SPAN_BEFORE_END_US, EventSet, HostActivity


class Cause(str, Enum):
    UNATTRIBUTED = "unattributed"
    HOST_BLOCKED = "host_blocked"
    HOST_TRACING = "host_tracing"
    TRANSFER_TO_DEVICE = "transfer_to_device"
    TRANSFER_FROM_DEVICE = "transfer_from_device"
    COMPILE = "compile"


# Code = priority: where host activities overlap, the highest code wins.
CAUSES: tuple[Cause, ...] = tuple(Cause)
CODE = {cause: code for code, cause in enumerate(CAUSES)}


@dataclass
class GapPieces:
    """Columnar pieces of device idle time, sorted by start within each device."""

    __repr__ = short_repr

    device: np.ndarray  # int32: index into the worker's device list
    start_us: np.ndarray  # float64
    dur_us: np.ndarray  # float64
    cause: np.ndarray  # int8: index into CAUSES
    span: np.ndarray  # int64: index into the worker's SpanIndex, -1 where none
    stack: np.ndarray  # int64: index into the worker's StackSamples.stacks, -1 where none

    def __len__(self) -> int:
        return int(self.start_us.size)

    @staticmethod
    def concat(parts: list[GapPieces]) -> GapPieces:
        if not parts:
            z = np.zeros(0)
            return GapPieces(np.zeros(0, np.int32), z, z, np.zeros(0, np.int8), np.zeros(0, np.int64),
                             np.zeros(0, np.int64))
        return GapPieces(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                           ("device", "start_us", "dur_us", "cause", "span", "stack")))

    def idle_by_cause(self) -> dict[str, float]:
        sums = np.bincount(self.cause.astype(np.int64), weights=self.dur_us, minlength=len(CAUSES))
        return {cause.value: float(sums[code]) for code, cause in enumerate(CAUSES)}


@dataclass
class CauseIntervals:
    """The host's activity as merged intervals per cause code (index = code)."""

    starts: list[np.ndarray]
    ends: list[np.ndarray]

    @staticmethod
    def from_host(host: HostActivity) -> CauseIntervals:
        running, blocked = host.sampled_work()
        dynamo = host.frame_compiling()
        by_code: dict[int, tuple[np.ndarray, np.ndarray]] = {
            CODE[Cause.HOST_BLOCKED]: blocked,
            CODE[Cause.HOST_TRACING]: (np.concatenate((host.tracing.start, running[0])),
                                       np.concatenate((host.tracing.end, running[1]))),
            CODE[Cause.TRANSFER_TO_DEVICE]: (host.transfers_to_device.start, host.transfers_to_device.end),
            CODE[Cause.TRANSFER_FROM_DEVICE]: (host.reads_waited_for[0].start, host.reads_waited_for[0].end),
            CODE[Cause.COMPILE]: (np.concatenate((host.compiles.start, host.edge_compile.start, dynamo[0])),
                                  np.concatenate((host.compiles.end, host.edge_compile.end, dynamo[1]))),
        }
        starts, ends = [np.zeros(0)], [np.zeros(0)]
        for code in range(1, len(CAUSES)):
            s, e = intervals.merge(*by_code[code])
            starts.append(s)
            ends.append(e)
        return CauseIntervals(starts, ends)

    def state_at(self, points: np.ndarray) -> np.ndarray:
        """The winning cause code at each time point."""
        state = np.zeros(points.shape, np.int8)
        for code in range(1, len(CAUSES)):
            inside = intervals.covering(self.starts[code], self.ends[code], points) >= 0
            state[inside] = code
        return state


def attribute(device: DeviceTimeline, device_index: int, host: HostActivity,
              causes: CauseIntervals, window: tuple[float, float], reruns: np.ndarray) -> GapPieces:
    w0, w1 = window
    g0, g1 = intervals.complement(device.busy_starts, device.busy_ends, w0, w1)
    if g0.size == 0:
        return GapPieces.concat([])
    compiling = causes.starts[CODE[Cause.COMPILE]], causes.ends[CODE[Cause.COMPILE]]
    reads, read_index = host.reads_waited_for
    read_of_gap, read_start, read_end, call_end = _reads_opening_gaps(reads, reruns[read_index], g0, g1, *compiling)

    # The training thread's sampled runs cut pieces too: each piece is one run's, named by its stack.
    run_starts = host.moment_stacks.runs_on(host.main_line)[0]
    points = [g0, g1, read_start, read_end, run_starts[(run_starts > w0) & (run_starts < w1)]]
    for code in range(1, len(CAUSES)):
        s, e = intervals.clip(causes.starts[code], causes.ends[code], w0, w1)
        points += [s, e]
    bounds = np.unique(np.concatenate(points))
    left, right = bounds[:-1], bounds[1:]
    mids = (left + right) / 2
    gap = intervals.covering(g0, g1, mids)
    keep = gap >= 0
    left, right, mids, gap = left[keep], right[keep], mids[keep], gap[keep]
    state = causes.state_at(mids)
    # Rule 2 overrides rule 1: a read's share of the gap it opened is the read's, whatever else ran
    # but a compile inside the read's call (the graph the read needs, compiled first).
    share = intervals.covering(read_start, read_end, mids)
    in_call = (share >= 0) & (mids < np.append(call_end, -np.inf)[share])  # share -1: the -inf
    state[(share >= 0) & ~(in_call & (state == CODE[Cause.COMPILE]))] = CODE[Cause.TRANSFER_FROM_DEVICE]
    # Merge consecutive elementary intervals of the same gap and cause into one piece.
    run = np.searchsorted(run_starts, mids, side="right")
    run[state >= CODE[Cause.TRANSFER_TO_DEVICE]] = -1  # a piece named by its event is not cut at runs
    new_run = np.ones(left.size, bool)
    new_run[1:] = (gap[1:] != gap[:-1]) | (state[1:] != state[:-1]) | (run[1:] != run[:-1])
    first = np.flatnonzero(new_run)
    last = np.append(first[1:] - 1, left.size - 1)
    start, end = left[first], right[last]
    piece_gap, piece_cause = gap[first], state[first]

    span, line, when, until, read, compiled = _name_pieces(host, reads, start, end, piece_cause, piece_gap,
                                                           read_of_gap)
    stack = host.moment_stacks.at(line, when, until) if len(host.stacks) else np.full(start.size, -1, np.int64)
    blocked = np.flatnonzero((piece_cause == CODE[Cause.HOST_BLOCKED]) & (stack >= 0))
    if blocked.size:  # waiting for another thread: the root is what that thread was doing (rule 4)
        stack[blocked] = host.moment_stacks.working_threads(stack[blocked], when[blocked], host.main_line)
    stack[read >= 0] = host.read_stack[read_index[read[read >= 0]]]  # a read's: its call's, as the reads have it
    stack[compiled >= 0] = host.compile_stack[compiled[compiled >= 0]]  # a compile's: as its record has it
    return GapPieces(np.full(start.size, device_index, np.int32), start, end - start, piece_cause, span, stack)


def _reads_opening_gaps(reads: EventSet, reruns: np.ndarray, g0: np.ndarray, g1: np.ndarray,
                        compile_starts: np.ndarray, compile_ends: np.ndarray):
    """Rule 2: the blocking read holding each gap's opening, the idle time it is charged (its
    blocked time outside compiles, which are merged intervals, less the device time it spent on work
    run again later: ``reruns``, per read) as (start, end) per charged gap, and the end of that
    read's call."""
    if not len(reads):
        return np.full(g0.size, -1, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    read_of_gap = reads.holding_all(g0)
    hit = np.flatnonzero(read_of_gap >= 0)
    start, end = reads.start[read_of_gap[hit]], reads.end[read_of_gap[hit]]
    blocked = end - start - intervals.measure_between(compile_starts, compile_ends, start, end) \
        - reruns[read_of_gap[hit]]
    # The read already holds the idle time inside its call before this gap opened (rule 1): the host is
    # early by its blocked time in all, so the gap's share is what is left of it.
    held = np.maximum(intervals.measure_between(g0, g1, start, g0[hit])
                      - intervals.measure_between(compile_starts, compile_ends, start, g0[hit]), 0.0)
    share = np.clip(np.minimum(g1[hit] - g0[hit], blocked - held), 0.0, None)
    return read_of_gap, g0[hit], g0[hit] + share, end


def _name_pieces(host: HostActivity, reads: EventSet, start: np.ndarray, end: np.ndarray, cause: np.ndarray,
                 gap: np.ndarray, read_of_gap: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per piece: its span (rule 4), the host line and time (for tracing and unattributed time) or
    event (start, end) whose stack names it, for a read's piece the read (of ``reads``) and for a
    compile's the compile (-1 for others)."""
    by_code: dict[int, EventSet] = {
        CODE[Cause.COMPILE]: host.compiles,
        CODE[Cause.TRANSFER_FROM_DEVICE]: reads,
        CODE[Cause.TRANSFER_TO_DEVICE]: host.transfers_to_device,
        CODE[Cause.HOST_TRACING]: host.tracing,
    }
    span = np.full(start.size, -1, np.int64)
    line = np.full(start.size, host.main_line, np.int64)
    when = until = (start + end) / 2  # a moment, or for a piece caused by an event, the event
    until = until.copy()
    named = np.zeros(start.size, bool)
    read = np.full(start.size, -1, np.int64)
    compiled = np.full(start.size, -1, np.int64)
    for code, events in by_code.items():
        pick = np.flatnonzero(cause == code)
        j = events.holding_all(start[pick])
        if code == CODE[Cause.TRANSFER_FROM_DEVICE]:
            missing = j < 0
            j[missing] = read_of_gap[gap[pick[missing]]]  # rule 2: idle time charged past the read's end
        pick, j = pick[j >= 0], j[j >= 0]
        # The span around the causing event; for tracing, the span open at the moment its stack is read.
        at = when[pick] if code == CODE[Cause.HOST_TRACING] else events.start[j]
        if code == CODE[Cause.TRANSFER_FROM_DEVICE]:
            at = events.end[j] - READ_SPAN_BEFORE_END_US
        span[pick] = host.spans_at(events.line[j].astype(np.int64), at)
        if code == CODE[Cause.TRANSFER_FROM_DEVICE]:
            read[pick] = j
        if code == CODE[Cause.COMPILE]:
            compiled[pick] = j
        named[pick] = True
        line[pick] = events.line[j]
        if code != CODE[Cause.HOST_TRACING]:
            when[pick], until[pick] = events.start[j], events.end[j]
    rest = np.flatnonzero(~named)
    span[rest] = host.spans_at(np.full(rest.size, -1, np.int64), when[rest])
    return span, line, when, until, read, compiled
