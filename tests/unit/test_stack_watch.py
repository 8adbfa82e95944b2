"""The stack sampler's C loop (collectors/_stack_watch.c) on real threads."""
from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import time
import types
import weakref
import zlib

import pytest
from collectors._stack_watch import Watcher

from collectors import stack_runs
from collectors.stack_runs import KnownStack, KnownStacks, StackReader
from collectors.stack_sampler import TRIP_THREAD
from tests.support.cpu_spinner import spinning
from tests.support.gil_hold import range_lasting
from tests.support.workloads.ab_harness import thread_names

pytestmark = pytest.mark.exclusive  # a thread sharing a core with a spinner: no other load

PERIOD_S = 0.001


def watcher_of(thread: threading.Thread) -> Watcher:
    return Watcher(thread.ident, thread.native_id, PERIOD_S, 0.0005, 0.008)


class Parked:
    """A thread that waits in ``first`` until told, then in ``second`` until told, then ends."""

    def __init__(self) -> None:
        self.go_on, self.in_second, self.end = threading.Event(), threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.first, daemon=True)
        self.thread.start()

    def first(self) -> None:
        self.go_on.wait()
        self.second()

    def second(self) -> None:
        self.in_second.set()
        self.end.wait()

    def finish(self) -> None:
        self.go_on.set()
        self.end.set()
        self.thread.join()


def code_names(stack) -> list[str]:
    """The function names of a stack ``Watcher.wait`` returned, innermost first."""
    return [code.co_name for code, _ in stack]


def stack_where(watcher: Watcher, holds, timeout_s: float = 5.0):
    """The first stack ``watcher`` returns whose function names satisfy ``holds``, else its last one
    at ``timeout_s``: a thread leaving a wait may first be seen on its way out (``Condition.wait``
    taking its lock back, ``_acquire_restore``), which a slow machine shows as a change of its own."""
    started = time.monotonic()
    stack = watcher.wait(timeout_s)
    while not holds(code_names(stack)) and time.monotonic() - started < timeout_s:
        stack = watcher.wait(timeout_s)
    return stack


def test_the_first_wait_returns_the_current_stack_then_a_wait_returns_once_it_changes():
    parked = Parked()
    try:
        watcher = watcher_of(parked.thread)
        first = watcher.wait(5.0)
        assert "first" in code_names(first) and "second" not in code_names(first)
        del first
        threading.Timer(0.2, parked.go_on.set).start()
        started = time.monotonic()
        changed = watcher.wait(5.0)
        waited = time.monotonic() - started
        assert 0.15 < waited < 2.0  # it waited for the change, not for the timeout
        if "second" not in code_names(changed):  # seen on its way out of first's wait
            changed = stack_where(watcher, lambda names: "second" in names)
        assert "second" in code_names(changed)
    finally:
        parked.finish()


def test_an_unchanged_stack_is_returned_at_the_timeout_having_sampled_all_along():
    parked = Parked()
    try:
        watcher = watcher_of(parked.thread)
        watcher.wait(1.0)
        samples = watcher.samples
        started = time.monotonic()
        stack = watcher.wait(0.1)
        assert time.monotonic() - started >= 0.1
        assert "first" in code_names(stack) and "second" not in code_names(stack)
        assert watcher.kept == watcher.depth == len(code_names(stack))  # nothing to format again
        assert watcher.samples - samples >= 20  # about 100 at 1 kHz; a busy machine backs off to 8 ms
    finally:
        parked.finish()


def test_the_gil_it_holds_is_counted_with_its_callers_python_between_two_waits():
    """``held_ns`` counts the GIL from a wait's taking it to the next wait's letting go, the caller's
    own Python between them too (a sum that keeps the GIL here), and not the samples of a thread that
    did not run, taken without it."""
    parked, numbers = Parked(), range_lasting(0.05)
    try:
        watcher = watcher_of(parked.thread)
        watcher.wait(1.0)
        watcher.wait(0.3)  # the parked thread does not run: about 300 samples without the GIL
        parked_ns = watcher.held_ns
        started = time.monotonic_ns()
        sum(numbers)
        summed_ns = time.monotonic_ns() - started
        watcher.wait(0.01)
        both_ns = time.monotonic_ns() - started
        holding_ns = watcher.held_ns - parked_ns
    finally:
        parked.finish()
    assert parked_ns < 20_000_000, parked_ns  # its first comparison and two returns: microseconds
    assert summed_ns <= holding_ns <= both_ns, (summed_ns, holding_ns, both_ns)


def test_the_kept_frames_it_reports_let_a_reader_format_only_the_changed_ones():
    parked = Parked()
    try:
        watcher, reader = watcher_of(parked.thread), StackReader()
        first = watcher.wait(5.0)
        assert watcher.kept == 0 and watcher.depth == len(code_names(first))
        assert reader.read(first, watcher.depth - watcher.kept, watcher.kept).text == StackReader().read(first).text
        del first
        threading.Timer(0.1, parked.go_on.set).start()
        changed = watcher.wait(5.0)
        # the frames above Parked.first stayed; first moved to the line calling second
        assert 0 < watcher.kept < watcher.depth == len(code_names(changed))
        stack = reader.read(changed, watcher.depth - watcher.kept, watcher.kept)
        assert stack.text == StackReader().read(changed).text
    finally:
        parked.finish()


def test_its_key_names_the_stack_it_returned_and_a_keyed_read_formats_a_stack_once(monkeypatch):
    parked = Parked()
    formatted = []
    original = StackReader._format
    monkeypatch.setattr(StackReader, "_format", lambda self, *args: formatted.append(1) or original(self, *args))
    try:
        watcher = watcher_of(parked.thread)
        assert watcher.key is None
        first = watcher.wait(5.0)
        first_key = watcher.key
        assert len(first_key) == 16 * watcher.depth  # a code address and a line per frame
        again = watcher.wait(0.05)  # unchanged: returned again at the timeout
        assert watcher.key == first_key and again == first
        reader = StackReader()
        read = reader.read(first, watcher.depth, 0, first_key)
        assert reader.read(again, 0, watcher.depth, first_key) is read and len(formatted) == 1
        assert StackReader().read(first, key=first_key) is read and len(formatted) == 1  # any reader
        threading.Timer(0.1, parked.go_on.set).start()
        changed = watcher.wait(5.0)
        assert watcher.key != first_key
        assert reader.read(changed, watcher.depth - watcher.kept, watcher.kept, watcher.key).text == \
            StackReader().read(changed).text and len(formatted) == 3
    finally:
        parked.finish()


def test_a_wait_given_the_known_stacks_returns_a_known_stacks_entry_instead_of_its_pairs(monkeypatch):
    """The emitters pass the stacks the readers formatted (``read_stacks()``): a stack found there comes
    back as its entry, which a reader takes as it takes the pairs, with no pairs built."""
    monkeypatch.setattr(stack_runs, "_read_stacks", KnownStacks())
    parked = Parked()
    try:
        watcher, known = watcher_of(parked.thread), stack_runs.read_stacks()
        first = watcher.wait(5.0, known)
        assert type(first) is tuple and code_names(first)[-1] == "_bootstrap"  # not known yet: its pairs
        read = StackReader().read(first, key=watcher.key)
        again = watcher.wait(0.05, known)  # the same stack at the timeout, known now
        assert type(again) is KnownStack and again.pairs == first
        assert StackReader().read(again) is read
        with pytest.raises(TypeError):
            watcher.wait(0.01, list(known))
    finally:
        parked.finish()


def test_a_thread_that_ended_gives_none_and_returned_counts_the_stacks_only():
    parked = Parked()
    watcher = watcher_of(parked.thread)
    assert watcher.wait(1.0) is not None and watcher.wait(0.01) is not None
    parked.finish()
    assert watcher.wait(1.0) is None
    assert watcher.returned == 2


def test_the_watcher_keeps_no_frame_alive():
    """It holds and returns code objects and lines, never a frame: a local of a function the thread
    has left is freed while the watcher and what it returned live (a frame held while the thread ran
    on kept its tensors alive through its sync, which compiled a new graph with them as outputs)."""
    ready, leave, done = threading.Event(), threading.Event(), threading.Event()

    class Local:
        pass

    refs = []

    def holds_a_local():
        local = Local()
        refs.append(weakref.ref(local))
        ready.set()
        leave.wait()

    def body():
        holds_a_local()
        done.wait()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    ready.wait()
    watcher = watcher_of(thread)
    stack = watcher.wait(1.0)
    assert "holds_a_local" in code_names(stack)
    assert all(isinstance(code, types.CodeType) and isinstance(line, int) for code, line in stack)
    leave.set()
    assert "holds_a_local" not in code_names(stack_where(watcher, lambda names: "holds_a_local" not in names))
    gc.collect()
    assert refs[0]() is None
    done.set()
    thread.join()


@pytest.mark.parametrize("arguments", [(1, 1, 0.0, 0.0005, 0.008), (1, 1, 0.01, 0.0005, 0.008),
                                       (1, 1, 0.001, -1.0, 0.008)])
def test_a_period_out_of_range_is_refused(arguments):
    with pytest.raises(ValueError, match="period_s"):
        Watcher(*arguments)


def test_a_thread_that_does_not_run_is_sampled_without_the_gil():
    """While this thread holds the GIL for 0.3 s, the watcher of a parked thread goes on sampling
    (a sample that needed the GIL would wait for it, one at most)."""
    parked = Parked()
    watcher = watcher_of(parked.thread)
    watching = threading.Thread(target=lambda: [watcher.wait(5.0) for _ in range(2)], daemon=True)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(10.0)  # the GIL stays with this thread while it runs Python
    try:
        watching.start()
        time.sleep(0.05)  # the watcher took its first sample and waits for the next change
        before, until = watcher.samples, time.monotonic() + 0.3
        while time.monotonic() < until:
            pass
        held = watcher.samples - before
    finally:
        sys.setswitchinterval(switch)
        parked.finish()
        watching.join()
    assert held >= 30  # about 300 at 1 kHz


def test_a_thread_kept_off_its_core_counts_its_run_queue_wait_as_wanted_time():
    """On a loaded host a thread running Python waits for a core, runnable: ``wanted_ns`` counts that
    wait beside its CPU time, so the analysis does not take it for blocked."""
    core = sorted(os.sched_getaffinity(0))[0]
    with spinning(core):
        done, started = threading.Event(), threading.Event()

        def busy():
            os.sched_setaffinity(0, {core})  # this thread only: share the spinner's core
            started.set()
            end = time.monotonic() + 0.6
            while time.monotonic() < end:
                pass
            done.wait()

        thread = threading.Thread(target=busy, daemon=True)
        thread.start()
        started.wait()
        watcher = watcher_of(thread)
        watcher.wait(0.05)
        cpu0, wanted0, t0 = watcher.cpu_ns, watcher.wanted_ns, time.monotonic_ns()
        time.sleep(0.4)
        watcher.wait(0.05)
        wall = time.monotonic_ns() - t0
        cpu, wanted = watcher.cpu_ns - cpu0, watcher.wanted_ns - wanted0
        done.set()
        thread.join()
    assert cpu < 0.75 * wall, (cpu, wall)  # it shared the core
    assert wanted > 0.85 * wall and wanted >= cpu, (wanted, cpu, wall)  # and wanted it all the time


class Spinning:
    """A thread running one line (C calls that keep the GIL, in a loop) until told, then the next line
    of the same function until told, then ends: its CPU clock moves at every sample."""

    def __init__(self) -> None:
        self.move_on, self.end = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.spin, daemon=True)
        self.thread.start()

    def spin(self) -> None:
        while not self.move_on.is_set(): sum(range(20_000))  # noqa: E701 (one line, by design)
        while not self.end.is_set(): sum(range(20_000))  # noqa: E701

    def finish(self) -> None:
        self.move_on.set()
        self.end.set()
        self.thread.join()


def _spin_line(stack) -> int:
    """The line ``Spinning.spin`` is at in a stack ``Watcher.wait`` returned: a sample may also find the
    thread inside the ``Event.is_set`` its loop calls, one frame deeper."""
    return next(line for code, line in stack if code is Spinning.spin.__code__)


def test_a_running_thread_that_moves_to_another_line_of_its_function_is_seen_at_once():
    spinning = Spinning()
    first_line = Spinning.spin.__code__.co_firstlineno + 1
    try:
        watcher, until = watcher_of(spinning.thread), time.monotonic() + 2.0
        while _spin_line(watcher.wait(0.02)) != first_line:
            assert time.monotonic() < until, "the thread never reached its first loop"
        threading.Timer(0.2, spinning.move_on.set).start()
        started = time.monotonic()
        while (moved := _spin_line(watcher.wait(5.0))) == first_line and time.monotonic() - started < 5.0:
            pass  # the thread seen going in and out of its loop's is_set(), still on its first line
        waited = time.monotonic() - started
    finally:
        spinning.finish()
    assert moved == first_line + 1
    assert 0.15 < waited < 2.0  # the change was found at a sample, not at the timeout


@pytest.mark.parametrize("spinners", [0, 2])
def test_a_sample_taken_while_the_thread_keeps_the_gil_is_timed_before_its_wait_for_it(spinners):
    """A thread in a C call that keeps the GIL (a sum over a range, as gc.collect() on a big heap) is
    read once the call returns; the sample's time (``sampled_ns``) is when it was taken, before the
    wait, so that the call's time goes to the stack read after it, as its CPU time does. Also where
    the thread shares its core with two other processes' spinning threads, running a third of the time:
    it was runnable the rest, and kept the GIL all along."""
    started, hold, park = threading.Event(), {}, threading.Event()
    numbers = range_lasting(0.2)
    core = sorted(os.sched_getaffinity(0))[0]

    def holding() -> None:
        if spinners:
            os.sched_setaffinity(0, {core})  # this thread only: share the spinners' core
        started.set()
        time.sleep(0.05)  # parked: the watcher's first stack
        hold["start_ns"] = time.monotonic_ns()
        sum(numbers)
        hold["end_ns"] = time.monotonic_ns()
        park.wait()

    sum_line = holding.__code__.co_firstlineno + 6

    with contextlib.ExitStack() as spinning_processes:
        for _ in range(spinners):
            spinning_processes.enter_context(spinning(core))
        thread = threading.Thread(target=holding, daemon=True)
        thread.start()
        started.wait()
        try:
            watcher = watcher_of(thread)
            while watcher.wait(5.0)[0][1] < sum_line:  # until the stack read once the sum let go of the GIL
                pass
            sampled_ns = watcher.sampled_ns
        finally:
            park.set()
            thread.join()
    half_way = hold["start_ns"] + (hold["end_ns"] - hold["start_ns"]) // 2
    assert hold["start_ns"] - 5_000_000 <= sampled_ns < half_way, (sampled_ns - hold["start_ns"],
                                                                   hold["end_ns"] - hold["start_ns"])



@contextlib.contextmanager
def tripping_the_main_thread(on_sample):
    """A tripping watcher of the main thread (this one: pending calls run in the main thread only),
    a thread of its own calling ``on_sample(watcher, stack)`` at each return of its wait until the
    block ends; the interpreter's switch interval set as the sampler sets it."""
    assert threading.current_thread() is threading.main_thread()
    main, stop = threading.main_thread(), threading.Event()
    watcher = Watcher(main.ident, main.native_id, PERIOD_S, 0.0005, 0.008, trips=True)

    def collect():
        while not stop.is_set():
            on_sample(watcher, watcher.wait(0.02))

    collecting = threading.Thread(target=collect, daemon=True)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        collecting.start()
        time.sleep(0.05)  # its first sample taken
        yield watcher
    finally:
        stop.set()
        collecting.join()
        watcher.close()
        sys.setswitchinterval(switch)


def _python_between_releases():
    """Pure Python, a loop of it: what a thread runs between two short calls that let go of the GIL."""
    total = 0
    for i in range(1500):
        total += i
    return total


def _release_the_gil(buffer: bytes) -> None:
    zlib.crc32(buffer)  # a C call that lets go of the GIL (as a tokenizer's or a torch op's does)


def _alternate_for_a_second(spent: dict) -> None:
    """Runs Python between short releases of the GIL for a second; puts in ``spent`` when it began and
    ended (``time.monotonic_ns``) and the share of its time it ran the Python (``truth``)."""
    buffer, python_s, release_s = bytes(200_000), 0.0, 0.0
    began_ns = time.monotonic_ns()
    while time.monotonic_ns() - began_ns < 1e9:
        t0 = time.perf_counter()
        _python_between_releases()
        t1 = time.perf_counter()
        _release_the_gil(buffer)
        python_s, release_s = python_s + t1 - t0, release_s + time.perf_counter() - t1
    spent.update(began_ns=began_ns, ended_ns=time.monotonic_ns(), truth=python_s / (python_s + release_s))


def _sampled_shares(samples, began_ns: int, ended_ns: int) -> dict[str, float]:
    """Each innermost function's share of [began_ns, ended_ns], a sample's stack running until the next one."""
    shares: dict[str, float] = {}
    for (at, name), (next_at, _) in zip(samples, samples[1:]):
        start, end = max(at, began_ns), min(next_at, ended_ns)
        if end > start:
            shares[name] = shares.get(name, 0.0) + (end - start)
    total = sum(shares.values()) or 1.0
    return {name: value / total for name, value in shares.items()}


def test_the_main_thread_letting_go_of_the_gil_often_is_sampled_where_it_runs_python():
    """A thread running Python between short calls that let go of the GIL keeps it from a thread
    waiting for it (each release starts that wait over): a watcher taking the GIL sampled only those
    calls. A tripping watcher of the main thread asks the thread for a pending call instead, and its
    samples split the time as the thread spent it; the kept frames it reports let a reader format
    only the changed ones, sample after sample."""
    samples, formatted, reader, spent = [], [], StackReader(), {}

    def on_sample(watcher, stack):
        samples.append((watcher.sampled_ns, stack[0][0].co_name))
        text = reader.read(stack, watcher.depth - watcher.kept, watcher.kept).text
        formatted.append(text == StackReader().read(stack).text)

    with tripping_the_main_thread(on_sample):
        _alternate_for_a_second(spent)
    sampled = _sampled_shares(samples, spent["began_ns"], spent["ended_ns"]).get("_python_between_releases", 0.0)
    assert len(samples) >= 50, len(samples)  # about 900 a second here; a busy machine backs off to 8 ms
    assert abs(sampled - spent["truth"]) < 0.2, (sampled, spent["truth"])
    assert all(formatted)


def test_another_thread_letting_go_of_the_gil_often_is_sampled_where_it_runs_python():
    """The same thread as above, run by a thread other than the main one, which no pending call can
    trip: its watcher, about to take the GIL, asks the thread holding it to let it go at its next
    check (collectors/_eval_break.c), so the thread is sampled in its Python too, not only at its
    releases of the GIL (0-1% of the samples there, where it ran 43% of the time, before the ask)."""
    spent = {}
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.001)  # as the sampler sets it
    try:
        thread = threading.Thread(target=_alternate_for_a_second, args=(spent,))
        thread.start()
        watcher, samples = watcher_of(thread), []
        while (stack := watcher.wait(0.02)) is not None and thread.is_alive():
            samples.append((watcher.sampled_ns, stack[0][0].co_name))
        thread.join()
    finally:
        sys.setswitchinterval(switch)
    sampled = _sampled_shares(samples, spent["began_ns"], spent["ended_ns"]).get("_python_between_releases", 0.0)
    assert abs(sampled - spent["truth"]) < 0.2, (sampled, spent["truth"])
    assert len(samples) >= 50, len(samples)  # about 450 a second here (49 before the ask)


def _asleep_for(seconds: float) -> None:
    time.sleep(seconds)


def test_a_tripping_watcher_reads_the_main_thread_blocked_in_a_call_itself():
    """Blocked (here in a sleep, the GIL let go), the main thread runs no pending call until it wakes:
    its watcher reads its stack itself at its timeout, stamped when it was asked (its stack cannot
    have moved before the call ran), so the sleep's line runs from about when it blocked; and each
    timeout after returns it again stamped when read (an event cut and reopened on it is not moved
    back to the sleep's start, which ended the runs before it where the analysis sorted them)."""
    first, refresh_lags = [], []

    def on_sample(watcher, stack):
        if "_asleep_for" in code_names(stack):
            first.append(watcher.sampled_ns)
            if watcher.kept == watcher.depth:
                refresh_lags.append((time.monotonic_ns() - watcher.sampled_ns) / 1e6)

    with tripping_the_main_thread(on_sample):
        _python_between_releases()
        slept_ns = time.monotonic_ns()
        _asleep_for(0.3)
    assert -1 < (first[0] - slept_ns) / 1e6 < 100, (first[0] - slept_ns) / 1e6  # about a period; 8 ms backed off
    assert len(refresh_lags) >= 5, refresh_lags  # about 14 timeouts of 20 ms
    assert max(refresh_lags) < 50, refresh_lags


def _tripping_thread() -> int:
    """The thread id of this process's tripping thread (Linux)."""
    (task,) = [tid for tid, name in thread_names().items() if name == TRIP_THREAD]
    return task


def _tripping_thread_wakes() -> int:
    """How many times this process's tripping thread was switched to so far (Linux)."""
    with open(f"/proc/self/task/{_tripping_thread()}/status") as status:
        return sum(int(line.split()[1]) for line in status
                   if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))


def test_the_tripping_thread_runs_as_a_batch_thread_whose_wake_ups_preempt_no_one():
    with tripping_the_main_thread(lambda watcher, stack: None):
        _python_for(0.02)
        assert os.sched_getscheduler(_tripping_thread()) == os.SCHED_BATCH


def test_the_tripping_thread_parks_through_a_long_block_and_samples_the_python_after_it():
    """An ask the blocked main thread leaves pending parks the tripping thread until the thread, back in
    Python, runs the call, which wakes it: no wake-up a period through a long read (on the CPU device
    the device computes on those cores meanwhile), and the Python after it sampled at the period."""
    with tripping_the_main_thread(lambda watcher, stack: None) as watcher:
        _python_for(0.05)
        woken = _tripping_thread_wakes()
        _asleep_for(0.5)
        woken_while_blocked = _tripping_thread_wakes() - woken
        asked = watcher.samples
        _python_for(0.2)
        asked_after = watcher.samples - asked
    assert woken_while_blocked < 50, woken_while_blocked  # a few periods, then parked; 500 at 1 kHz unparked
    assert asked_after >= 10, asked_after  # 100 to 200 at 1 kHz, 25 backed off to 8 ms


def test_the_tripping_thread_parks_at_its_first_look_at_a_blocked_thread():
    """A main thread blocked with an ask pending (its CPU clock still) cannot answer before it is back in
    Python: the tripping thread parks the first time it finds the ask pending, one wake-up a block, not
    a wake-up a period until the ask is PARK_PERIODS old (two to three a block at 1 kHz)."""
    blocks, pending = 40, 0
    with tripping_the_main_thread(lambda watcher, stack: None) as watcher:
        for _ in range(blocks):
            _python_for(0.002)
            before = watcher.pending_wakes
            _asleep_for(0.01)
            pending += watcher.pending_wakes - before
    assert 0.5 <= pending / blocks < 1.5, pending / blocks


def test_a_tripping_watcher_counts_the_time_it_found_the_thread_blocked_with_that_calls_run():
    """The main thread asleep in a call, then running Python, in turn: the time the watcher found it
    blocked in a call (an ask answered late, the thread off the CPUs meanwhile) goes to the run of the
    sleep's line; none to the Python's, where a thread kept from its core answers late too."""
    names = {function.__code__: function.__name__ for function in (_asleep_for, _python_for)}
    blocked = {name: 0 for name in names.values()}
    last = []

    def on_sample(watcher, stack):
        if last and last[0] is not None:  # the run from the last sample to this one
            blocked[last[0]] += watcher.seen_blocked_ns - last[1]
        last[:] = [next((names[c] for c, _ in stack or () if c in names), None), watcher.seen_blocked_ns]

    blocks = 20
    with tripping_the_main_thread(on_sample):
        for _ in range(blocks):
            _python_for(0.005)
            _asleep_for(0.01)
        _python_for(0.03)
    assert blocked["_asleep_for"] >= 0.3 * blocks * 0.01 * 1e9, blocked
    assert blocked["_python_for"] <= 0.05 * blocked["_asleep_for"], blocked


def test_an_interrupt_ends_a_tripping_watchers_wait_at_once():
    """The main thread's emitter waits long (``DRAIN_S``); ``flush()`` interrupts it: the current wait
    returns at once, or else the next one does."""
    main = threading.main_thread()
    watcher = Watcher(main.ident, main.native_id, PERIOD_S, 0.0005, 0.008, trips=True)
    waited = []

    def collect():
        watcher.wait(5.0)  # the first wait reads the stack at once
        for _ in range(2):
            started = time.monotonic()
            watcher.wait(30.0)
            waited.append(time.monotonic() - started)

    try:
        collecting = threading.Thread(target=collect, daemon=True)
        collecting.start()
        time.sleep(0.3)  # blocked: no trip runs, nothing is queued, the wait goes on
        watcher.interrupt()
        collecting.join(timeout=0.5)
        watcher.interrupt()  # the second wait, under way or next, returns at once too
        collecting.join(timeout=5.0)
    finally:
        watcher.close()
    assert not collecting.is_alive() and len(waited) == 2, waited
    assert 0.1 < waited[0] < 2.0 and waited[1] < 2.0, waited


def test_one_watcher_trips_the_main_thread_at_a_time():
    main = threading.main_thread()
    first = Watcher(main.ident, main.native_id, PERIOD_S, 0.0005, 0.008, trips=True)
    second = Watcher(main.ident, main.native_id, PERIOD_S, 0.0005, 0.008, trips=True)
    try:
        first.wait(0.01)
        with pytest.raises(RuntimeError, match="another Watcher trips"):
            second.wait(0.01)
        first.close()
        assert second.wait(0.01) is not None  # the first let go
    finally:
        first.close()
        second.close()


def _python_for(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _crc_of(buffer: bytes) -> None:
    zlib.crc32(buffer)  # lets go of the GIL, and runs


def _sum_of(numbers: range) -> None:
    sum(numbers)  # keeps the GIL


def test_each_sample_of_the_main_thread_is_stamped_while_its_stack_ran():
    """Phases of Python, a sleep, a C call letting go of the GIL and one keeping it, in turn: every
    sample a tripping watcher returns is stamped (``sampled_ns``) inside a phase of the function its
    stack names (give or take 0.3 ms at a phase's edges). A watcher that takes the GIL stamped a
    sample before its wait for the GIL, where the stack it then read had moved on (about half)."""
    phases = [(_python_for, 0.002), (_asleep_for, 0.003), (_crc_of, bytes(2_000_000)), (_sum_of, range(60_000))]
    codes = {function.__code__: function.__name__ for function, _ in phases}
    samples, ran = [], []

    def on_sample(watcher, stack):
        samples.append((watcher.sampled_ns, next((codes[c] for c, _ in stack if c in codes), None)))

    with tripping_the_main_thread(on_sample):
        until = time.monotonic() + 1.5
        while time.monotonic() < until:
            for function, argument in phases:
                began = time.monotonic_ns()
                function(argument)
                ran.append((began, time.monotonic_ns(), function.__name__))
    margin = 300_000
    inside = [(at, name) for at, name in samples if name is not None and ran[0][0] <= at <= ran[-1][1]]
    misplaced = [(at, name) for at, name in inside
                 if not any(began - margin <= at <= ended + margin for began, ended, ran_name in ran
                            if ran_name == name)]
    assert len(inside) >= 50, len(inside)
    assert not misplaced, misplaced[:5]
