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

import pytest
from collectors._stack_watch import Watcher

from collectors.stack_runs import StackReader
from tests.support.cpu_spinner import spinning
from tests.support.gil_hold import range_lasting

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
        assert "second" in code_names(changed)
        assert 0.15 < waited < 2.0  # it waited for the change, not for the timeout
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


def test_a_thread_that_ended_gives_none():
    parked = Parked()
    watcher = watcher_of(parked.thread)
    assert watcher.wait(1.0) is not None
    parked.finish()
    assert watcher.wait(1.0) is None


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
    assert "holds_a_local" not in code_names(watcher.wait(1.0))
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


def test_a_running_thread_that_moves_to_another_line_of_its_function_is_seen_at_once():
    spinning = Spinning()
    first_line = Spinning.spin.__code__.co_firstlineno + 1
    try:
        watcher, until = watcher_of(spinning.thread), time.monotonic() + 2.0
        while watcher.wait(0.02)[0][1] != first_line:
            assert time.monotonic() < until, "the thread never reached its first loop"
        threading.Timer(0.2, spinning.move_on.set).start()
        started = time.monotonic()
        moved = watcher.wait(5.0)
        waited = time.monotonic() - started
    finally:
        spinning.finish()
    assert moved[0][1] == first_line + 1
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
