"""What the host was doing: transfers, compiles, graph tracing and user spans, from the host plane.

Contract: ``HostActivity.from_space(space)`` gathers, as sorted ``EventSet`` tables:
- ``transfers_from_device``: each blocking read (``.item()``, ``print(t)``, ``nonzero``) as the
  whole Python call that reads the value: its TransferFromDevice extended back to where the call
  began, so the call's forced early run of a partial graph (its tracing, sync and barrier wait)
  belongs to the read that forced it. Where the reading op marked its call (``READ_CALL_EVENT``),
  the read is that call, from where its line began to the op's return; else, where the sampler
  recorded the thread's stacks, the call began when the run of samples holding the read began
  (the same Python line, nothing deeper); without stacks, at the start of the chain of runtime
  events (tracing, barrier) before the transfer on its thread, each within ``READ_JOIN_US`` of the
  next. A read on a thread that runs no Python (the autograd engine's, running an op's CPU
  fallback inside ``loss.backward()``: its inputs read, the op computed on the CPU, its result
  uploaded) ends where the op's result is uploaded (``_fallback_calls``): the fallback's CPU work
  belongs to the read that took it off the device. ``EventSet.rows`` still name the transfer
  events themselves.
- ``transfers_to_device``, ``compiles`` (graph-level ``XLAGraphExecutor::Compile`` with its
  ``graph_hash``; the backend compile where no graph-level event exists), ``edge_compile``: the
  compiler's passes of a compile that began before the capture (``span_index.compiler_rows``),
  ``tracing`` (the lazy tensor machinery, and the user's spans on threads whose stacks were not
  sampled: there a span is the best sign of the host running the step's Python; where the sampler
  ran, what the thread was doing decides, not which span was open: ``sampled_work``).
- ``spans``: the user spans (``SpanIndex``) and ``main_line``, the training loop's thread (the one
  its spans cover most; without spans, the sampled main thread, else the busiest Python thread).
- ``read_stack``: per read (in ``transfers_from_device`` order), the stack id of its Python call
  (``StackSamples.reads_on``); for a read on a thread that runs no Python (the autograd engine's
  thread running an op's CPU fallback inside ``loss.backward()``), the training thread's stack at
  the read: the line that waits for it; -1 where unknown.
- ``compile_stack``: per compile (in ``compiles`` order), the stack id of the Python that compiled:
  where the compile ran inside a read's call on its thread (a read forces the compile of the graph
  it needs: ``.item()``, a library's ``x in t``), that read's (the sampler, kept off the GIL through
  the compile, may show the thread's line before or after it); else what the sampler first saw
  during the compile; on a thread that runs no Python (the autograd engine's, compiling the graph
  an op's CPU fallback needs), the training thread's line that waits for it, as for reads; -1
  where none is known.
- ``stacks``: the Python stacks the worker's sampler recorded (``StackSamples``; empty for a worker
  without the sampler), ``python_lines``: the host lines of Python threads.
- ``frame_compiling()``: the training loop thread's sampled runs inside TorchDynamo's compile of a
  frame (``torch/_dynamo/convert_frame.py`` in the stack), as merged (starts, ends).
- ``sampled_work()``: from the training loop thread's sampled runs, the intervals where it ran
  Python and those where it was blocked on a line outside torch and torch_xla (a run blocked inside
  them is the runtime at work, e.g. ``loss.backward()`` waiting for the autograd engine's device
  thread, so it counts as running, until the call provably returned: a ``moved_on`` mark, a sync's or
  a read's end), each as merged (starts, ends). A run is split by its ``blocked_us``: blocked first,
  running after (a sleep returns, and the thread runs the lines after it until the next sample sees
  them), not given whole to the cause of most of its time; a runtime run whose call returned
  inside it spent its time off the CPUs in that call first (a sync, a read: the thread waited there),
  and only what exceeds the call's length is blocked after it returned. Time off the CPUs waiting
  for the GIL other sampled Python threads held (``StackSamples.waits_for_others_us``) is blocked,
  in torch or not: the thread waited for them.
- ``reads_waited_for``: ``transfers_from_device`` as they held the training thread back (with each
  one's index): a read of another of the process's Python threads (a logger's, a ``run_async`` step
  closure's) holds only its thread's CPU time inside it, at its end: the training thread did not wait
  for it, it traced on meanwhile, short of the core and the GIL that thread took.
- ``moment_stacks``: the runs that name a moment of the training thread's time
  (``StackSamples.woken``: after a blocking call returned, the line the sampler saw next).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.host.frames import PyStack
from xlaprof.analysis.host.python_stacks import MAIN_THREAD, StackSamples
from xlaprof.analysis.host.read_positions import named_by_position
from xlaprof.analysis.host.span_index import SpanIndex, compiler_rows
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import Plane, stat_text
from xlaprof.xspace.reader import XSpaceData

DYNAMO_FRAME_COMPILER = "/torch/_dynamo/convert_frame.py"  # TorchDynamo's compile of a frame runs under it
# Without stacks, the runtime events before a transfer belong to its read call when each starts this
# soon after the previous one ends (measured on torch_xla 2.9 CPU: gaps of 5-110 us inside one call).
READ_JOIN_US = 200.0
# A read returned this long before the next began: the thread ran other Python in between.
READ_RETURN_US = 100.0
# A sampled run is placed within a few sampling periods of where the thread really was (1 ms each at
# the default 1 kHz, backing off to 8 ms on a loaded host; at 5 ms, 2-8% of a CPU fallback's reads
# found no run of the backward): an event of a thread without Python is waited for by a run this near.
WAIT_NEAR_US = 20000.0
# A read's span is the one open just before the read ends: its Python call (the whole reading call,
# see the contract) may have begun before the span that reads.
READ_SPAN_BEFORE_END_US = 1e-3


@dataclass
class EventSet:
    __repr__ = short_repr
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
    __repr__ = short_repr
    plane: Plane | None
    transfers_from_device: EventSet
    transfers_to_device: EventSet
    compiles: EventSet
    compile_hashes: list[str | None]  # per compile, in EventSet order
    tracing: EventSet
    spans: SpanIndex
    main_line: int
    stacks: StackSamples = field(default_factory=StackSamples.empty)
    python_lines: frozenset[int] = frozenset()
    edge_compile: EventSet = field(default_factory=lambda: EventSet.of(None, np.zeros(0, np.int64)))
    read_stack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per read: its call's stack id
    compile_stack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per compile: its stack id

    @staticmethod
    def from_space(space: XSpaceData) -> HostActivity:
        plane = space.plane(vocabulary.HOST_PLANE)
        if plane is None:
            empty = EventSet.of(None, np.zeros(0, np.int64))
            return HostActivity(None, empty, empty, empty, [], empty, SpanIndex.from_plane(None), -1)
        runtime_rows = plane.rows_named(vocabulary.TRACING)
        tfd_rows = plane.rows_named(vocabulary.TRANSFER_FROM_DEVICE)
        marked = np.array(sorted(set(plane.stats.column(vocabulary.SOURCE_STAT))
                                 | set(plane.stats.column(vocabulary.STEP_NUM_STAT))), np.int64)
        python_rows = np.concatenate((runtime_rows, tfd_rows, marked))
        busiest = int(np.bincount(plane.events.line[python_rows]).argmax()) if python_rows.size else -1
        stacks = StackSamples.from_plane(plane, busiest)
        emitters = set(plane.line_ids_where(lambda name: name.startswith(vocabulary.STACK_LINE_PREFIX)).tolist())
        python_lines = frozenset(set(np.unique(plane.events.line[python_rows]).tolist())
                                 | set(stacks.sampled_lines)) - emitters
        passes = compiler_rows(plane, python_lines)
        spans = SpanIndex.from_plane(plane, python_lines, passes)
        boundary_rows = plane.rows_named(vocabulary.STEP_BOUNDARY)
        stacks = replace(stacks, moved_on=_moved_on(plane, boundary_rows, tfd_rows, spans))
        main_line = spans.busiest_line()
        if main_line < 0:  # no spans: the sampled main thread's line, else the busiest Python line
            main_line = next((line for line, name in stacks.thread_names.items() if name == MAIN_THREAD), busiest)
        chain = EventSet.of(plane, np.setdiff1d(runtime_rows, boundary_rows))
        tfd, read_stack = _read_calls(EventSet.of(plane, tfd_rows), chain, EventSet.of(plane, boundary_rows), stacks)
        uploads = EventSet.of(plane, plane.rows_named(vocabulary.TRANSFER_TO_DEVICE))
        tfd = _fallback_calls(tfd, uploads, chain, stacks)
        read_stack = _waited_for(tfd, read_stack, stacks, main_line)
        compile_rows = plane.rows_named(vocabulary.GRAPH_COMPILE)
        if compile_rows.size == 0:
            compile_rows = plane.rows_named(vocabulary.BACKEND_COMPILE)
        compiles = EventSet.of(plane, compile_rows)
        hashes = plane.stats.column(vocabulary.GRAPH_HASH_STAT)
        compile_hashes = [stat_text(hashes.get(int(r))) for r in compiles.rows]
        unsampled_spans = spans.rows[~np.isin(spans.line, np.array(stacks.sampled_lines, np.int32))]
        span_rows = np.union1d(runtime_rows, unsampled_spans)
        return HostActivity(plane, tfd, uploads, compiles, compile_hashes, EventSet.of(plane, span_rows), spans, main_line,
                            stacks, python_lines, EventSet.of(plane, passes), read_stack,
                            _waited_for(compiles, _compile_stacks(compiles, tfd, read_stack, stacks), stacks,
                                        main_line))

    def sampled_work(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        start, end, stack, blocked_us = self.stacks.runs_on(self.main_line)
        for_others = self.stacks.waits_for_others_us(self.main_line)
        blocked_us = np.where(for_others > 0, for_others, blocked_us)
        marks = np.r_[-np.inf, self.stacks.moved_on.get(self.main_line, np.zeros(0))]
        last = marks[np.searchsorted(marks, end, side="left") - 1]  # when the thread last left a line before
        left = np.where(last > start, last, end)
        runtime_end = np.where(self.stacks.in_runtime[stack] & (for_others == 0), left, start)
        after = end - runtime_end
        woke = runtime_end + np.minimum(after, np.maximum(blocked_us - (runtime_end - start), 0.0))
        blocked = woke > runtime_end
        return (intervals.merge(np.concatenate((start, woke)), np.concatenate((runtime_end, end))),
                intervals.merge(runtime_end[blocked], woke[blocked]))

    @cached_property
    def reads_waited_for(self) -> tuple[EventSet, np.ndarray]:
        """``transfers_from_device`` as they held the training thread back, sorted, and each one's index
        in ``transfers_from_device``. Its own reads and those of threads that run no Python (the
        autograd engine's, inside a call the training thread waits in) are whole. A read on another
        sampled Python thread (a logger thread's, a ``run_async`` step closure's) does not stop the
        training thread, which traces on meanwhile: what it takes from it is the core and the GIL the
        reading thread uses, so it holds only its thread's CPU time inside it (its runs' CPU time,
        spread evenly over each run), at its end, where the transfer runs once the device has
        finished. All whole where no stacks were sampled."""
        reads = self.transfers_from_device
        index = np.arange(len(reads))
        others = [line for line in self.stacks.sampled_lines if line != self.main_line]
        if self.main_line < 0 or not others or not len(reads):
            return reads, index
        start = reads.start.copy()
        for line in others:
            mine = np.flatnonzero(reads.line == line)
            used = self.stacks.cpu_between(line, reads.start[mine], reads.end[mine])
            start[mine] = np.maximum(reads.start[mine], reads.end[mine] - used)
        order = np.argsort(start, kind="stable")
        return EventSet(reads.rows[order], start[order], reads.end[order], reads.line[order]), index[order]

    @cached_property
    def moment_stacks(self) -> StackSamples:
        """The sampled runs that name a moment of a thread's time (``StackSamples.woken``)."""
        return self.stacks.woken()

    def frame_compiling(self) -> tuple[np.ndarray, np.ndarray]:
        """The training loop thread's sampled runs inside TorchDynamo's compile of a Python frame into
        a graph (``torch.compile``: its bytecode tracing, AOT autograd, the backend's setup), merged:
        compile work, however much of it is Python."""
        start, end, stack, _ = self.stacks.runs_on(self.main_line)
        compiling = self.stacks.flags(_compiling_a_frame)
        return intervals.merge(start[compiling[stack]], end[compiling[stack]])

    def span_at(self, line: int, t: float) -> int:
        """The innermost user span at ``t`` on ``line`` (the main line when ``line`` < 0)."""
        return int(self.spans_at(np.array([line]), np.array([t], np.float64))[0])

    def spans_at(self, lines: np.ndarray, times: np.ndarray) -> np.ndarray:
        """``span_at`` for each (line, time) pair at once."""
        return self.spans.innermost_all(np.where(lines >= 0, lines, self.main_line), times)


def _fallback_calls(reads: EventSet, uploads: EventSet, runtime: EventSet, stacks: StackSamples) -> EventSet:
    """``reads`` with each read on a thread that runs no Python (where the sampler ran: it samples
    every Python thread) ending where the first upload on its thread after it ends, if that upload
    begins before the thread's next read or runtime event: an op's CPU fallback (inputs read, the op
    computed on the CPU, its result uploaded), whose CPU work belongs to the read."""
    if not len(reads) or not len(uploads) or not len(stacks):
        return reads
    end = reads.end.copy()
    no_python = ~np.isin(reads.line, np.array(stacks.sampled_lines, np.int32))
    for line in np.unique(reads.line[no_python]).tolist():
        mine = np.flatnonzero(reads.line == line)
        u_start, u_end = uploads.start[uploads.line == line], uploads.end[uploads.line == line]
        r_start = runtime.start[runtime.line == line]  # sorted, as an EventSet is
        after = np.searchsorted(u_start, reads.end[mine], side="left")
        found = after < u_start.size
        upload_start = np.where(found, u_start[np.minimum(after, u_start.size - 1)], np.inf)
        next_read = np.append(reads.start[mine][1:], np.inf)
        next_runtime = np.append(r_start, np.inf)[np.searchsorted(r_start, reads.end[mine], side="left")]
        fallback = found & (upload_start < np.minimum(next_read, next_runtime))
        end[mine[fallback]] = np.maximum(end[mine[fallback]], u_end[after[fallback]])
    return EventSet(reads.rows, reads.start, end, reads.line)


def _waited_for(events: EventSet, event_stack: np.ndarray, stacks: StackSamples, main_line: int) -> np.ndarray:
    """``event_stack`` with the events of threads that run no Python (the sampler, which samples every
    Python thread, never saw them: the autograd engine's, running an op's CPU fallback or compiling
    the graph it needs) and no stack yet named by the training thread's stack at the event's end: the
    call that waits for it (``loss.backward()``) cannot have returned before it. The training
    thread's runs are placed within a few sampling periods of where they really were, so its run
    inside the autograd engine's entry (``torch/autograd/``: the engine's caller) nearest the event,
    within ``WAIT_NEAR_US``, is the call that waited; without one, the stack at the event's end."""
    no_python = ~np.isin(events.line, np.array(stacks.sampled_lines, np.int32)) & (event_stack < 0)
    if not no_python.any() or main_line < 0 or not len(stacks):
        return event_stack
    named = event_stack.copy()
    pick = np.flatnonzero(no_python)
    at_end = stacks.at(np.full(pick.size, main_line, np.int64), events.end[pick])
    named[pick] = _nearest_engine_call(stacks, main_line, events.start[pick], events.end[pick], at_end)
    return named


def _nearest_engine_call(stacks: StackSamples, line: int, starts: np.ndarray, ends: np.ndarray,
                         stack_ids: np.ndarray) -> np.ndarray:
    """``stack_ids`` (per event [start, end]), each replaced by the stack of ``line``'s run inside the
    autograd engine's entry nearest the event, where one is within ``WAIT_NEAR_US`` (the one holding
    the event's end first)."""
    run_start, run_end, run_stack, _ = stacks.runs_on(line)
    waits = stacks.in_autograd_engine[run_stack]
    w_start, w_end, w_stack = run_start[waits], run_end[waits], run_stack[waits]
    if not w_start.size:
        return stack_ids
    before = np.clip(np.searchsorted(w_start, ends, side="right") - 1, 0, w_start.size - 1)
    after = np.minimum(before + 1, w_start.size - 1)

    def distance(k: np.ndarray) -> np.ndarray:
        return np.maximum(0.0, np.maximum(w_start[k] - ends, starts - w_end[k]))
    nearest = np.where(distance(before) <= distance(after), before, after)
    return np.where(distance(nearest) <= WAIT_NEAR_US, w_stack[nearest], stack_ids)


def _compile_stacks(compiles: EventSet, reads: EventSet, read_stack: np.ndarray,
                    stacks: StackSamples) -> np.ndarray:
    """``compile_stack`` (see the contract)."""
    found = (stacks.at(compiles.line.astype(np.int64), compiles.start, compiles.end) if len(stacks)
             else np.full(len(compiles), -1, np.int64))
    held = reads.holding_all(compiles.start)
    in_read = np.flatnonzero((held >= 0) & (np.append(reads.line, -1)[held] == compiles.line))  # held -1: no line
    by_read = read_stack[held[in_read]]
    found[in_read] = np.where(by_read >= 0, by_read, found[in_read])
    return found


def _compiling_a_frame(stack: PyStack) -> bool:
    return any(frame.file.replace("\\", "/").endswith(DYNAMO_FRAME_COMPILER) for frame in stack.frames)


def _read_calls(reads: EventSet, runtime: EventSet, boundaries: EventSet,
                stacks: StackSamples) -> tuple[EventSet, np.ndarray]:
    """Each read extended to the Python call that made it (see the contract), and
    the stack id of that call (``StackSamples.reads_on``; -1 where unknown). A read's call never
    reaches back over a step boundary (an explicit sync) on its thread: neither a chain of runtime
    events nor the sampled run of its line (whose start the sampler may see late: a step closure's
    line, first sampled once the sync released the GIL, would take the sync and the optimizer's
    step before it)."""
    read_stack = np.full(len(reads), -1, np.int64)
    if not len(reads):
        return reads, read_stack
    start, end = reads.start.copy(), reads.end.copy()
    for line in np.unique(reads.line).tolist():
        mine = np.flatnonzero(reads.line == line)
        on_line = runtime.line == line
        r_start, r_end = runtime.start[on_line], runtime.end[on_line]
        b_end = np.sort(boundaries.end[boundaries.line == line])
        last_boundary = np.searchsorted(b_end, reads.start[mine], side="right") - 1
        boundary = b_end[np.maximum(last_boundary, 0)] if b_end.size else np.zeros(mine.size)
        after_sync = np.where(last_boundary >= 0, boundary, -np.inf)
        chained = np.maximum(_chain_starts(r_start, r_end, reads.start[mine]), after_sync)
        read_stack[mine], seen_begun, end[mine], seen = stacks.reads_on(line, reads.start[mine], reads.end[mine],
                                                                        chained)
        # An inferred stack votes unless it is a marked call's: a read outside every mark given one is
        # most likely the marked read before it, whose run the sampler, come late, still showed.
        inferred_mark = np.isin(read_stack[mine], stacks.read_calls.stack) & ~seen
        read_stack[mine] = named_by_position(read_stack[mine], seen, seen | ~inferred_mark, reads.start[mine],
                                             b_end)
        previous_end = -np.inf
        for i, begun, chain, synced in zip(mine.tolist(), seen_begun.tolist(), chained.tolist(), after_sync.tolist()):
            start[i] = max(min(chain if begun == -np.inf else begun, reads.start[i]), previous_end, synced)
            previous_end = end[i]
    return EventSet(reads.rows, start, end, reads.line), read_stack


def _moved_on(plane: Plane, boundary_rows: np.ndarray, read_rows: np.ndarray,
              spans: SpanIndex) -> dict[int, np.ndarray]:
    """Per host line, when its Python provably went on to another line: an explicit sync
    returned, a user span began, or a read returned and the thread did something else for
    ``READ_RETURN_US`` (reads back to back, as in ``[t.item() for t in ts]``, are one line's)."""
    ev = plane.events
    lines = np.concatenate((ev.line[boundary_rows], spans.line, ev.line[read_rows])).astype(np.int64)
    times = np.concatenate((ev.start_us[boundary_rows] + ev.dur_us[boundary_rows], spans.start,
                            ev.start_us[read_rows] + ev.dur_us[read_rows] + READ_RETURN_US))
    return {int(line): np.sort(times[lines == line]) for line in np.unique(lines).tolist()}


def _chain_starts(r_start: np.ndarray, r_end: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each time ``t``, where the chain of runtime events (sorted by start) ending just before it
    began: walking back from the last event begun before ``t``, each event joins while the one after
    it (or ``t``) begins within ``READ_JOIN_US`` of the furthest end of the events begun up to it
    (a nested event, begun last, ends before the sync holding it); ``t`` where none does."""
    if not r_start.size:
        return times.astype(np.float64, copy=True)
    reach = np.maximum.accumulate(r_end)  # events nest: an event begun last may end before its parent
    last = np.searchsorted(r_start, times, side="left") - 1
    joined = (last >= 0) & (times - reach[np.maximum(last, 0)] <= READ_JOIN_US)
    breaks = np.flatnonzero(np.r_[True, r_start[1:] - reach[:-1] > READ_JOIN_US])  # where a chain begins
    first = breaks[np.searchsorted(breaks, np.maximum(last, 0), side="right") - 1]
    return np.where(joined, np.minimum(r_start[first], times), times)
