"""The Python stacks the worker's stack sampler recorded, by thread and time.

Contract: ``StackSamples.from_plane(plane, main_line)`` collects the sample events of
``collectors/stack_sampler.py`` (events carrying ``py_stack``; see ``vocabulary``), each moved back
to when its sample was taken (``py_lag_us``: the sampler records an event once it has the GIL and a
core, which on a busy host may be a millisecond later, and reads the stack once it has the GIL: a
call that kept it meanwhile ran at that stack's line), a run ending where the thread's next
began. Each is placed on the host line of the thread it sampled (its ``py_thread`` line id); a sample whose thread has no
line of its own in the capture (the thread recorded no TraceMe event) stays on its emitter's line,
except the main thread's, which goes to ``main_line``. Consecutive samples of one thread with the
same stack are merged into one run (the sampler cuts long runs into 0.1 s events).
- ``at(lines, times)``: for each (host line, time) the stack id sampled there, or -1. The sampler
  sees a stack up to one period after it began, so a time just before a run's start (within
  ``LAG_US``) belongs to that run.
- ``at(lines, starts, ends)``: for events, the stack of the first run the sampler began during
  each event (it saw the thread inside it; the run holding an event's start may be the previous
  line's, seen late), else the run holding its end. ``reads_on(line, starts, ends)``: for the
  reads on ``line``, the stack of each read's call and when the call began and ended: the call's own mark
  where the reading op marked it (``read_calls``, ``collectors/read_calls.py``), else taken from inside
  the read where the sampler saw it, else never from a line that does not read (see the method).
- ``working_threads(stack_ids, times, own_line)``: for a thread waiting for another one (a queue's
  get), the stack of a sampled thread that was working then with a line to name (the loader's slow
  collate; ``named[i]``: whether stack ``i`` has a ``source``).
- ``stacks[i]`` is the ``PyStack`` of stack id ``i``; ``waiting[i]`` whether it waits for another
  thread (one array per ``StackSamples``, made on first use; ``waiting[-1]``, no stack, is False);
  ``in_autograd_engine[i]`` likewise, whether it is in the autograd engine's entry (``backward()``);
  ``flags(holds)`` any such array, ``holds(stack)`` per stack id.
- ``blocked_us``: per run, the time its thread was blocked on the run's line (a sleep, a queue, a
  read): the run's time less the sampler's ``py_cpu_us`` (the time the thread was on a CPU, or
  runnable and waiting for one on a loaded host; captures made before the sampler counted the
  run-queue wait count CPU time only), where that is at least ``WOKEN_SHARE`` of the run and the
  run's line can block (``blocks_here``: its thread's sampler found the thread blocked in a call at
  that line somewhere in the capture, the stack waits for another thread, or the sampler does not
  tell; ``seen_blocked_us``, per run, the time it found the thread blocked in calls, NaN where it does
  not tell); the rest of the run it was running Python. A run off the CPUs less than that ran Python
  and waited now and then (for the GIL another thread held, a lock): 0. Runs recorded without CPU
  times (older captures) count as running throughout. ``off_cpu_us``: the run's time off the CPUs, whatever its share.
  ``waits_for_others_us(line)``: per run of ``line``, its thread's time off the CPUs where that was a
  wait for the GIL the process's other sampled Python threads held (see the method), else 0.
  ``runs_on(line)``: the runs of one host line as (start, end, stack, blocked_us) arrays.
- ``cpu_between(line, starts, ends)``: the CPU time of a thread within intervals, from its runs.
- ``woken()``: the runs as they name the moments of a thread's time (see the method): a run blocked
  at least ``WOKEN_SHARE`` of its time on a line outside torch and torch_xla ends where its thread
  woke up, and the time after is the thread's next run's.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.host.frames import PyStack, parse_stack
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import Plane, stat_text

LAG_US = 2000.0  # how late the sampler may first see a stack (1 kHz, plus waiting for the GIL)
MERGE_US = 1000.0  # consecutive samples this close with the same stack are one run
MAIN_THREAD = "MainThread"
SEEN_US = 1.0  # a run that begins in an event's last microsecond was seen after it
# A run off the CPUs at least this share of its time is a blocking call (a sleep, a queue's get): the
# time it ran after it is the thread's next line, which the sampler saw late (``StackSamples.woken``).
# One off them less is a line running Python that waited now and then (for the GIL, a lock): in the
# corpus' A/B arms the truth harness' own bookkeeping ran 80-100% of its runs' time, and counting the
# rest as blocked put 5-10 points of idle time under host_blocked where the truth had none.
WOKEN_SHARE = 0.5


@dataclass
class ReadCalls:
    """The Python calls of reads that the reading ops marked themselves (``vocabulary.READ_CALL_EVENT``):
    per call its host line, start, end (us) and stack id, sorted by (line, start). Calls of one
    thread never overlap (a reading op's own reads run below the marking)."""
    line: np.ndarray  # int32
    start: np.ndarray
    end: np.ndarray
    stack: np.ndarray  # int64

    @staticmethod
    def empty() -> ReadCalls:
        return ReadCalls(np.zeros(0, np.int32), np.zeros(0), np.zeros(0), np.zeros(0, np.int64))

    def holding(self, line: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Per event [start, end] on ``line``: the index of the call it lies in, or -1."""
        lo, hi = np.searchsorted(self.line, [line, line + 1])
        i = np.searchsorted(self.start[lo:hi], starts, side="right") - 1 + lo
        inside = (i >= lo) & (self.end[np.maximum(i, 0)] >= ends) if hi > lo else np.zeros(starts.size, bool)
        return np.where(inside, i, -1)


@dataclass
class StackSamples:
    __repr__ = short_repr
    stacks: list[PyStack]
    line: np.ndarray  # int32: host line (index into Plane.lines) of the sampled thread, sorted
    start: np.ndarray  # float64 us, sorted within each line
    end: np.ndarray  # float64 us
    stack: np.ndarray  # int64: index into stacks
    thread_names: dict[int, str] = field(default_factory=dict)  # host line -> Python thread name
    cpu_us: np.ndarray | None = None  # float64: CPU time of the run's thread during it, NaN where unknown
    # float64: time the sampler found the run's thread blocked in a call of its stack (0: none); NaN
    # where the run's thread's sampler does not tell (older captures, threads other than the main one)
    seen_blocked_us: np.ndarray | None = None
    # host line -> sorted times at which that thread provably left the line it was on (a sync
    # returned, a span began): given by host_activity, used to spot a run the sampler saw late
    moved_on: dict[int, np.ndarray] = field(default_factory=dict)
    read_calls: ReadCalls = field(default_factory=ReadCalls.empty)  # the reading ops' marks
    _ranges: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.start.size)

    def __post_init__(self) -> None:
        if self.cpu_us is None:
            self.cpu_us = np.full(self.start.size, np.nan)
        if self.seen_blocked_us is None:
            self.seen_blocked_us = np.full(self.start.size, np.nan)
        if self.start.size:
            bounds = np.flatnonzero(np.diff(self.line)) + 1
            for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, self.start.size]):
                self._ranges[int(self.line[lo])] = (int(lo), int(hi))

    @property
    def sampled_lines(self) -> list[int]:
        return list(self._ranges)

    @cached_property
    def off_cpu_us(self) -> np.ndarray:
        """Per run, the time its thread was neither on a CPU nor runnable (0 where unknown): computed once."""
        duration = self.end - self.start
        return np.where(np.isnan(self.cpu_us), 0.0, np.clip(duration - np.nan_to_num(self.cpu_us), 0.0, duration))

    @cached_property
    def blocked_us(self) -> np.ndarray:
        off = self.off_cpu_us
        return np.where((off >= WOKEN_SHARE * (self.end - self.start)) & self.blocks_here, off, 0.0)

    @cached_property
    def blocks_here(self) -> np.ndarray:
        """Per run, whether its time off the CPUs can be its own line's blocking call: its stack waits
        for another thread (a queue's get), or the sampler found the thread blocked in a call at the
        run's innermost line somewhere in the capture (``seen_blocked_us``: a sleep, a read, a wait
        it asked a sample in), or its thread's sampler does not tell. A line the thread was only ever
        seen running Python at was not blocked at itself: the thread slept between two samples past
        it (the sampler backed off on a busy host, 4-8 ms apart), in a call its next sample no longer
        showed (``moe_batched``'s training thread, 3-5 ms at lines of transformers' forward before
        each ``loss.backward()``, in PJRT's release of the last step's buffers), which is the
        runtime at work."""
        located = [s.frames[-1].location if s.frames else "" for s in self.stacks] + [""]
        seen = {located[k] for k in self.stack[self.seen_blocked_us > 0].tolist()}
        at_seen = np.array([where in seen for where in located], bool)
        return np.isnan(self.seen_blocked_us) | at_seen[self.stack] | self.waiting[self.stack]

    def waits_for_others_us(self, line: int) -> np.ndarray:
        """Per run of ``line``: its thread's time off the CPUs where, meanwhile, the process's other
        sampled Python threads (not themselves waiting for a thread) ran Python for at least half as
        long: it waited for the GIL they held (a loader's threads collating batches), inside torch or
        not; else 0."""
        lo, hi = self._ranges.get(int(line), (0, 0))
        others = ((self.line != line) & (np.nan_to_num(self.cpu_us) >= WOKEN_SHARE * (self.end - self.start))
                  & ~self.waiting[self.stack])
        starts, ends = intervals.merge(self.start[others], self.end[others])
        ran = intervals.measure_between(starts, ends, self.start[lo:hi], self.end[lo:hi])
        off = self.off_cpu_us[lo:hi]
        return np.where(ran >= WOKEN_SHARE * off, off, 0.0)

    def flags(self, holds) -> np.ndarray:
        """``holds(stack)`` per stack id, and a last False for -1 (a run without a stack)."""
        return np.array([holds(s) for s in self.stacks] + [False], bool)

    @cached_property
    def waiting(self) -> np.ndarray:
        """Per stack id, whether the stack waits for another thread (``PyStack.waits_for_a_thread``),
        and a last False for -1 (no stack): computed once, on first use."""
        return self.flags(lambda s: s.waits_for_a_thread)

    @cached_property
    def named(self) -> np.ndarray:
        """Per stack id, whether it has a line to name (``PyStack.source``), and a last False for -1."""
        return self.flags(lambda s: s.source is not None)

    @cached_property
    def in_runtime(self) -> np.ndarray:
        """Per stack id, whether its innermost frame is torch's or torch_xla's (``PyStack.in_runtime``),
        and a last False for -1: computed once, on first use."""
        return self.flags(lambda s: s.in_runtime)

    @cached_property
    def in_autograd_engine(self) -> np.ndarray:
        """Per stack id, whether it is in the autograd engine's entry (``PyStack.in_autograd_engine``),
        and a last False for -1: computed once, on first use."""
        return self.flags(lambda s: s.in_autograd_engine)

    def cpu_between(self, line: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Per (start, end): the CPU time of ``line``'s thread in it, each run's ``cpu_us`` spread evenly
        over the run (0 where unknown, and between runs)."""
        lo, hi = self._ranges.get(int(line), (0, 0))
        if hi == lo:
            return np.zeros(starts.size)
        at = np.maximum.accumulate(np.column_stack((self.start[lo:hi], self.end[lo:hi])).ravel())
        used = np.cumsum(np.column_stack((np.zeros(hi - lo), np.nan_to_num(self.cpu_us[lo:hi]))).ravel())
        return np.interp(ends, at, used) - np.interp(starts, at, used)

    def runs_on(self, line: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        lo, hi = self._ranges.get(int(line), (0, 0))
        return self.start[lo:hi], self.end[lo:hi], self.stack[lo:hi], self.blocked_us[lo:hi]

    @staticmethod
    def empty() -> StackSamples:
        z = np.zeros(0)
        return StackSamples([], np.zeros(0, np.int32), z, z, np.zeros(0, np.int64))

    @staticmethod
    def from_plane(plane: Plane | None, main_line: int) -> StackSamples:
        if plane is None:
            return StackSamples.empty()
        texts = plane.stats.column(vocabulary.PY_STACK_STAT)
        call_texts = plane.stats.column(vocabulary.PY_READ_STACK_STAT)
        if not texts and not call_texts:
            return StackSamples.empty()
        interned: dict[str, int] = {}
        samples = _sample_runs(plane, texts, interned, main_line) if texts else StackSamples.empty()
        read_calls = _marked_read_calls(plane, call_texts, interned)
        return replace(samples, stacks=[parse_stack(text) for text in interned], read_calls=read_calls)

    def woken(self) -> StackSamples:
        """The runs that name the moments of a thread's time: each run blocked (``blocked_us``) on a
        line outside torch and torch_xla (a sleep, a queue's get, I/O) ends where its
        thread woke up, its ``blocked_us`` after its start, and the thread's next run, where it
        follows at once, begins there: the thread ran on from the call's return until the next
        sample saw its new line (up to a sampling period, more where the sampler backed off on a busy
        host). For naming moments only: its ``cpu_us`` are unknown (NaN)."""
        start, end, blocked = self.start.copy(), self.end.copy(), self.blocked_us
        follows = np.zeros(start.size, bool)
        follows[:-1] = (self.line[1:] == self.line[:-1]) & (start[1:] - end[:-1] <= MERGE_US)
        moved = np.flatnonzero(follows & ~self.in_runtime[self.stack] & (blocked > 0) & (blocked < end - start))
        start[moved + 1] = end[moved] = start[moved] + blocked[moved]
        return replace(self, start=start, end=end, cpu_us=np.full(start.size, np.nan), _ranges={})

    def _covering(self, line: int, times: np.ndarray) -> np.ndarray:
        lo, hi = self._ranges.get(int(line), (0, 0))
        found = np.full(times.size, -1, np.int64)
        if hi == lo:
            return found
        i = np.searchsorted(self.start[lo:hi], times, side="right") - 1 + lo
        inside = (i >= lo) & (self.end[np.maximum(i, lo)] > times)
        found[inside] = i[inside]
        nxt = np.minimum(i + 1, hi - 1)
        soon = ~inside & (i + 1 < hi) & (self.start[nxt] - times <= LAG_US) & (self.start[nxt] >= times)
        found[soon] = nxt[soon]
        return found

    def _first_seen(self, line: int, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per event [start, end] on ``line``: the first run the sampler began during it (it saw
        the thread inside the event), else the run holding its end, unless that run is stale: the
        thread provably moved on after the run began (``moved_on``) and before the event, and the
        event lasted at most ``LAG_US``. An event inside a stale run was not seen (a call shorter
        than the sampling period): the run after it is the thread's next line, not the event's, so
        it is never taken; its run is -1, and the stale run is returned beside (-1 for the others).
        A longer event was seen by the run holding its end, stale or not: the sampler, at most
        ``LAG_US`` late, still showed that run's stack after ``LAG_US`` of the event (a sampler
        kept from the thread's short excursion between two visits of one line, as two steps'
        syncs, made one run of both)."""
        lo, hi = self._ranges.get(int(line), (0, 0))
        found = self._covering(line, np.maximum(starts, ends - SEEN_US))
        stale_run = np.full(found.size, -1, np.int64)
        if hi == lo:
            return found, stale_run
        i = np.searchsorted(self.start[lo:hi], starts, side="left") + lo
        seen = (i < hi) & (self.start[np.minimum(i, hi - 1)] < ends - SEEN_US)
        found[seen] = i[seen]
        marks = self.moved_on.get(int(line))
        if marks is not None and marks.size:
            run_start = self.start[np.maximum(found, lo)]
            latest = np.searchsorted(marks, starts, side="right") - 1
            stale = (~seen & (found >= 0) & (latest >= 0) & (marks[np.maximum(latest, 0)] > run_start)
                     & (ends - starts <= LAG_US))
            stale_run[stale], found[stale] = found[stale], -1
        return found, stale_run

    def _stack_of(self, runs: np.ndarray) -> np.ndarray:
        """The stack id of each run (-1 for none)."""
        return np.where(runs >= 0, self.stack[np.maximum(runs, 0)], -1)

    def _seen_after_same_stack(self, line: int, found: np.ndarray, stale_run: np.ndarray) -> np.ndarray:
        """Stack ids of events: a seen event's run's; an unseen one (``stale_run`` >= 0) takes the
        stack most often seen for the events whose run followed a run of its stale run's stack (a
        loop's read, seen from inside in other iterations), else none (-1)."""
        lo, _ = self._ranges.get(int(line), (0, 0))
        result = self._stack_of(found)
        unseen = np.flatnonzero(stale_run >= 0)
        known = found[found > lo]
        if not unseen.size or not known.size:
            return result
        votes: dict[int, Counter] = {}
        for before, after in zip(self.stack[known - 1].tolist(), self.stack[known].tolist()):
            votes.setdefault(before, Counter())[after] += 1
        for k in unseen.tolist():
            counts = votes.get(int(self.stack[stale_run[k]]))
            if counts:
                result[k] = counts.most_common(1)[0][0]
        return result

    def at(self, lines: np.ndarray, times: np.ndarray, ends: np.ndarray | None = None) -> np.ndarray:
        """Stack ids at (line, time); with ``ends``, for events [times, ends] (``_first_seen``; an
        event the sampler did not see from inside: ``_seen_after_same_stack``)."""
        result = np.full(times.size, -1, np.int64)
        for line in np.unique(lines).tolist():
            mine = np.flatnonzero(lines == line)
            if ends is None:
                result[mine] = self._stack_of(self._covering(line, times[mine]))
            else:
                result[mine] = self._seen_after_same_stack(line, *self._first_seen(line, times[mine], ends[mine]))
        return result

    def working_threads(self, stack_ids: np.ndarray, times: np.ndarray, own_line: int) -> np.ndarray:
        """Per (stack id, time) of a thread on ``own_line``: where that stack waits for another thread
        (``PyStack.waits_for_a_thread``: a queue's get, a join), the stack of another sampled thread at
        that time that waits for none (the loader thread in its slow collate, sleeping or running),
        the first such in line order; else the given stack id."""
        result = stack_ids.copy()
        waiting, named = self.waiting, self.named
        pick = np.flatnonzero(waiting[stack_ids])
        for line in self.sampled_lines:
            if line == own_line or not pick.size:
                continue
            found = self._stack_of(self._covering(line, times[pick]))
            working = (found >= 0) & ~waiting[found] & named[found]
            result[pick[working]] = found[working]
            pick = pick[~working]
        return result

    def reads_on(self, line: int, starts: np.ndarray, ends: np.ndarray,
                 calls: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For the reads (TransferFromDevice events [start, end], sorted) on ``line``: the stack id
        of each read's Python call (-1 where unknown), when that call began (-inf where unknown),
        when it ended (the read's end where unknown), and whether that stack was seen (the read
        inside a mark, or a sampled run begun once its call was under way, at ``calls`` or after)
        rather than inferred from the runs around it. A read inside a marked call
        (``self.read_calls``) has that call's stack, began where the call's line began (``_line_began``)
        and ended with the call (a CPU-fallback op such as ``nonzero`` computes and uploads its
        result after the transfer).
        Otherwise the sampler tells: ``calls``: when each read's call provably was under way (its
        chain of runtime events before the transfer began). A read's run is ``_first_seen``'s
        where its stack is a reading stack: a marked call's, or one the sampler saw from inside a
        reading call somewhere in the capture (a run that began between ``calls`` and the read's
        end). A sampler that slept through a short read (or was kept off the cores by the device's
        own threads, which a read sets to work) saw the thread on the line it had before, then on
        the reading line just after, or on none: so where reading stacks exist, a read whose run's
        stack is not one takes the next run's (begun within ``LAG_US`` of the read's end) if that
        one is, else the stack seen for the reads that followed a run of its run's stack
        (``_seen_after_same_stack``), else none: never a line that does not read. A capture where
        no read was seen from inside keeps ``_first_seen``'s runs."""
        stacks, begun = self._sampled_reads(line, starts, ends, calls)
        held = self.read_calls.holding(line, starts, ends)
        seen = (held >= 0) | (begun >= calls)
        marked = np.flatnonzero(held >= 0)
        stacks[marked], begun[marked] = self.read_calls.stack[held[marked]], self._line_began(line, held[marked])
        ended = ends.copy()
        ended[marked] = self.read_calls.end[held[marked]]
        return stacks, begun, ended, seen

    def _line_began(self, line: int, held: np.ndarray) -> np.ndarray:
        """When each marked call's line began: the start of the sampled run holding the call's start
        where that run was on the same line (its stack begins with the call's: the statement that
        reads, as ``x = (a == b).nonzero()`` traces ``a == b`` before the op), else the call's start."""
        call_start = self.read_calls.start[held]
        run = self._covering(line, call_start)
        began = call_start.copy()
        for k in np.flatnonzero(run >= 0).tolist():
            sampled, marked = self.stacks[self.stack[run[k]]].frames, self.stacks[self.read_calls.stack[held[k]]].frames
            if sampled[:len(marked)] == marked:
                began[k] = min(began[k], self.start[run[k]])
        return began

    def _sampled_reads(self, line: int, starts: np.ndarray, ends: np.ndarray,
                       calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``reads_on`` from the sampler's runs alone."""
        if not len(self):
            return np.full(starts.size, -1, np.int64), np.full(starts.size, -np.inf)
        run, stale_run = self._first_seen(line, starts, ends)
        lo, hi = self._ranges.get(int(line), (0, 0))
        begun = np.searchsorted(self.start[lo:hi], calls, side="left") + lo
        inside = (begun < hi) & (self.start[np.minimum(begun, hi - 1)] < ends)
        reading = np.zeros(len(self.stacks) + 1, bool)
        reading[self.stack[begun[inside]]] = True
        reading[self.read_calls.stack] = True
        after = np.searchsorted(self.start[lo:hi], ends - SEEN_US, side="left") + lo
        soon = (after < hi) & (self.start[np.minimum(after, hi - 1)] - ends <= LAG_US)
        next_stack = np.where(soon, self.stack[np.minimum(after, hi - 1)], -1)
        found_stack = self._stack_of(run)
        doubtful = reading.any() & (found_stack >= 0) & ~reading[found_stack]
        moved = doubtful & reading[next_stack]
        stale_run = np.where(doubtful & ~moved, run, stale_run)  # like a stale run: its stack went before
        run = np.where(doubtful, -1, run)
        stacks = self._seen_after_same_stack(line, run, stale_run)
        stacks[moved] = next_stack[moved]
        if reading.any():
            stacks[~reading[stacks]] = -1
        return stacks, np.where(run >= 0, self.start[np.maximum(run, 0)], -np.inf)


def _run_heads(line: np.ndarray, start: np.ndarray, end: np.ndarray, stack: np.ndarray) -> np.ndarray:
    """True where a sample begins a new run (another thread, another stack, or a pause)."""
    head = np.ones(line.size, bool)
    head[1:] = (line[1:] != line[:-1]) | (stack[1:] != stack[:-1]) | (start[1:] - end[:-1] > MERGE_US)
    return head


def _interned(texts: dict, rows: np.ndarray, interned: dict[str, int]) -> np.ndarray:
    """Stack ids of the rows' stack texts, each new text given the next id."""
    return np.array([interned.setdefault(stat_text(texts[r]) or "", len(interned)) for r in rows.tolist()], np.int64)


def _sample_runs(plane: Plane, texts: dict, interned: dict[str, int], main_line: int) -> StackSamples:
    """The sampler's events as runs (see the contract); ``stacks`` is left to the caller."""
    thread_ids = plane.stats.column(vocabulary.PY_THREAD_STAT)
    thread_names = plane.stats.column(vocabulary.PY_THREAD_NAME_STAT)
    index_of_id = {line.id: i for i, line in enumerate(plane.lines)}
    rows = np.fromiter(texts, np.int64, len(texts))
    stack = _interned(texts, rows, interned)
    names = [stat_text(thread_names.get(r, "")) for r in rows.tolist()]
    line = np.array([_place(index_of_id, thread_ids.get(r), name, int(plane.events.line[r]), main_line)
                     for r, name in zip(rows.tolist(), names)], np.int32)
    cpu, seen_blocked = (_numbers(plane, stat, rows) for stat in (vocabulary.PY_CPU_STAT, vocabulary.PY_SEEN_BLOCKED_STAT))
    start, end = sampled_times(plane, rows)
    order = np.lexsort((start, line))
    line, start, end, stack, cpu, seen_blocked = (values[order] for values in
                                                  (line, start, end, stack, cpu, seen_blocked))
    end = ended_where_next_began(line, start, end)
    keep = _run_heads(line, start, end, stack)
    heads = np.flatnonzero(keep)
    run_end = np.maximum.reduceat(end, heads) if keep.size else end
    run_cpu = np.add.reduceat(cpu, heads) if keep.size else cpu  # NaN where a sample's is unknown
    # A thread whose sampler tells (the main thread's) has the stat on some run; its other runs saw none.
    seen_blocked, telling = np.nan_to_num(seen_blocked), np.isin(line, np.unique(line[~np.isnan(seen_blocked)]))
    run_seen_blocked = np.add.reduceat(seen_blocked, heads) if keep.size else seen_blocked
    by_line = {int(ln): nm for ln, nm in zip(line.tolist(), (names[i] for i in order.tolist())) if nm}
    return StackSamples([], line[keep], start[keep], run_end, stack[keep], by_line, run_cpu,
                        seen_blocked_us=np.where(telling[keep], run_seen_blocked, np.nan))


def sampled_times(plane: Plane, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """When the runs of the sampler's events ``rows`` began and ended: each event moved back to its
    sample by its ``py_lag_us`` (the emitter opens it once it takes the sample, up to
    ``stack_sampler.DRAIN_S`` later for the main thread), its end left where it closed."""
    lag = np.nan_to_num(_numbers(plane, vocabulary.PY_LAG_STAT, rows))
    opened = plane.events.start_us[rows]
    return opened - np.maximum(lag, 0.0), opened + plane.events.dur_us[rows]


def ended_where_next_began(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``end`` of runs sorted by (``line``, ``start``), each cut where its thread's next run began (its
    sample, not its later event)."""
    end, same_thread = end.copy(), line[1:] == line[:-1]
    end[:-1][same_thread] = np.minimum(end[:-1][same_thread], np.maximum(start[1:][same_thread],
                                                                         start[:-1][same_thread]))
    return end


def _marked_read_calls(plane: Plane, texts: dict, interned: dict[str, int]) -> ReadCalls:
    """The reading ops' marks (their ``py_read_stack`` texts) as ``ReadCalls``."""
    rows = np.fromiter(texts, np.int64, len(texts))
    line, start = plane.events.line[rows].astype(np.int32), plane.events.start_us[rows]
    order = np.lexsort((start, line))
    rows = rows[order]
    return ReadCalls(line[order], start[order], start[order] + plane.events.dur_us[rows],
                     _interned(texts, rows, interned))


def _numbers(plane: Plane, stat: str, rows: np.ndarray) -> np.ndarray:
    """The stat ``stat`` of each event of ``rows`` as a number, NaN where absent or not one."""
    column = plane.stats.column(stat)
    return np.array([_number(column.get(r)) for r in rows.tolist()], np.float64)


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def _place(index_of_id: dict[int, int], thread_id, name: str, emitter_line: int, main_line: int) -> int:
    try:
        placed = index_of_id.get(int(thread_id))
    except (TypeError, ValueError):
        placed = None
    if placed is not None:
        return placed
    return main_line if name == MAIN_THREAD and main_line >= 0 else emitter_line
