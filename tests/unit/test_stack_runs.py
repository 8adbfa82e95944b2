"""The pure part of the stack sampler (collectors/stack_runs.py), without torch: stacks read
from real frames of this interpreter (as ``frame_stack`` gives them), and samples coalesced into runs."""
from __future__ import annotations

import sys
import threading

from collectors.stack_runs import RunWriter, Stack, StackReader, frame_stack, hide_innermost, safe_text


def here() -> int:
    return sys._getframe(1).f_lineno


def outer(reader: StackReader, results: list, inner_first: bool) -> None:
    results.append((reader.read(frame_stack(sys._getframe())), here()))
    if inner_first:
        inner(reader, results)
    results.append((reader.read(frame_stack(sys._getframe())), here()))


def inner(reader: StackReader, results: list) -> None:
    results.append((reader.read(frame_stack(sys._getframe())), here()))


def test_a_stack_lists_path_line_and_function_outermost_first():
    reader, results = StackReader(), []
    outer(reader, results, inner_first=True)
    (first, first_line), (in_inner, inner_line), (back, back_line) = results
    frames = in_inner.text.split("\n")
    assert frames[-1] == f"{__file__}:{inner_line} inner"
    assert frames[-2] == f"{__file__}:{first_line + 2} outer"  # the line calling inner
    assert frames[-3].endswith(" test_a_stack_lists_path_line_and_function_outermost_first")
    assert in_inner.label == f"test_stack_runs.py:{inner_line} inner"
    assert first.text.split("\n")[-1] == f"{__file__}:{first_line} outer" and first.label.endswith(" outer")
    assert back.text.split("\n")[-1] == f"{__file__}:{back_line} outer"
    assert first.text.split("\n")[:-1] == frames[:-2] == back.text.split("\n")[:-1]  # the kept callers
    depth = len(frames)
    assert len(first.text.split("\n")) == depth - 1


class Method:
    def run(self, reader: StackReader) -> Stack:
        return reader.read(frame_stack(sys._getframe()))


def test_functions_are_named_by_their_qualified_name():
    assert Method().run(StackReader()).label.endswith(" Method.run")


def test_reading_an_unchanged_stack_again_gives_the_same_stack():
    reader, parked, read = StackReader(), threading.Event(), threading.Event()

    def park():
        read.set()
        parked.wait()

    thread = threading.Thread(target=park)
    thread.start()
    read.wait()
    try:
        stacks = [reader.read(frame_stack(sys._current_frames()[thread.ident])) for _ in range(3)]
    finally:
        parked.set()
        thread.join()
    assert stacks[0] is stacks[1] is stacks[2]
    assert any(f.endswith(" test_reading_an_unchanged_stack_again_gives_the_same_stack.<locals>.park")
               for f in stacks[0].text.split("\n"))


def test_a_reader_holds_no_frame():
    reader = StackReader()
    reader.read(frame_stack(sys._getframe()))
    assert all(isinstance(line, str) for line in reader._lines) and len(reader._lines) > 1


def test_kept_frames_come_from_the_previous_read_and_only_the_changed_ones_are_formatted():
    reader = StackReader()
    whole = reader.read(frame_stack(sys._getframe()))
    depth = len(whole.text.split("\n"))
    reader._lines[0] = "kept:1 outermost"  # what the previous read had: a kept frame is not formatted again
    again, line = reader.read(frame_stack(sys._getframe()), changed=1, kept=depth - 1), here()
    assert again.text.split("\n") == ["kept:1 outermost", *whole.text.split("\n")[1:-1],
                                      f"{__file__}:{line} {sys._getframe().f_code.co_name}"]
    assert again.label == f"test_stack_runs.py:{line} {sys._getframe().f_code.co_name}"
    assert reader.read(frame_stack(sys._getframe()), changed=0, kept=depth) is again  # nothing changed: the same stack
    # more kept frames than the previous read had: another previous read, so all is formatted
    fresh = StackReader().read(frame_stack(sys._getframe()), changed=1, kept=depth - 1).text.split("\n")
    assert fresh[:-1] == whole.text.split("\n")[:-1]


def _wrapper_of_xlaprof(frames: list) -> None:
    frames.append(sys._getframe())


hide_innermost(_wrapper_of_xlaprof.__code__)


def test_a_hidden_innermost_frame_is_left_out_and_the_stack_is_its_callers():
    frames: list = []
    _wrapper_of_xlaprof(frames)
    (wrapped,) = frames
    depth = len(StackReader().read(frame_stack(sys._getframe())).text.split("\n")) + 1  # the C loop counts the hidden frame
    reader = StackReader()
    # The wrapper's frame came on top of the caller's frames, all kept (all three reads on one line).
    me, kept = sys._getframe(), depth - 1
    caller, stack, whole = reader.read(frame_stack(me)), reader.read(frame_stack(wrapped), changed=1, kept=kept), StackReader().read(frame_stack(wrapped))
    assert stack is caller and whole.text == caller.text and "_wrapper_of_xlaprof" not in whole.text
    assert whole.label == caller.label and whole.label.startswith("test_stack_runs.py:")


def test_text_that_would_cut_the_profilers_metadata_is_replaced():
    assert safe_text("/a,b/#c/'d\"/e.py:1 h") == "/a?b/?c/?d?/e.py:1 h"
    assert safe_text("Thread-1 (run) [x] {y} <lambda>)]}") == "Thread-1 (run) [x] {y} <lambda>)]}"
    # brackets left open would swallow the stats after the value: only those go
    assert safe_text("a(b[c)d") == "a?b?c)d"
    assert safe_text("(a[b]c") == "?a[b]c"
    assert safe_text("{[}]") == "?[}]"


class Recorder:
    """Fake TraceMe events: each records (stack label, opened at, closed at)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.events: list[list] = []
        self.lags: list[float] = []
        self.stats: list[tuple] = []

    def open(self, stack: Stack, lag_us: float):
        event = [stack.label, self.now, None]
        self.events.append(event)
        self.lags.append(lag_us)
        recorder = self

        class Open:
            def set_metadata(self, **stats) -> None:
                assert event[2] is None, "metadata after the close"
                recorder.stats.append((stack.label, stats))

            def __exit__(self, *exc) -> None:
                assert event[2] is None, "closed twice"
                event[2] = recorder.now

        return Open()


def test_runs_coalesce_identical_samples_and_never_overlap():
    recorder, a, b = Recorder(), Stack("x.py:1 f", "x.py:1 f"), Stack("x.py:2 f", "x.py:2 f")
    writer = RunWriter(recorder.open, max_event_s=0.1)
    for now, stack in ((0.0, a), (0.001, a), (0.002, a), (0.003, b), (0.004, a), (0.005, a)):
        recorder.now = now
        writer.sample(now, stack)
    recorder.now = 0.006
    writer.close()
    writer.close()  # closing twice is a no-op
    assert recorder.events == [["x.py:1 f", 0.0, 0.003], ["x.py:2 f", 0.003, 0.004], ["x.py:1 f", 0.004, 0.006]]


def test_a_long_run_is_cut_at_the_maximum_age():
    recorder, a = Recorder(), Stack("x.py:1 f", "x.py:1 f")
    writer = RunWriter(recorder.open, max_event_s=0.1)
    for i in range(26):
        recorder.now = i * 0.01
        writer.sample(recorder.now, a)
    writer.close()
    assert [(round(start, 3), round(end, 3)) for _, start, end in recorder.events] == \
        [(0.0, 0.1), (0.1, 0.2), (0.2, 0.25)]


def test_a_run_records_its_sample_lag_and_the_cpu_time_its_thread_used():
    recorder, a, b = Recorder(), Stack("x.py:1 f", "x.py:1 f"), Stack("x.py:2 f", "x.py:2 f")
    writer = RunWriter(recorder.open, max_event_s=0.1)
    # (time, stack, the thread's CPU clock in ns, how late the event opens after the sample)
    for now, stack, cpu_ns, lag in ((0.0, a, 1_000_000, 40.0), (0.001, a, 1_900_000, 5.0), (0.002, b, 2_000_000, 7.0)):
        recorder.now = now
        writer.sample(now, stack, cpu_ns, lag)
    writer.close()
    assert recorder.lags == [40.0, 7.0]  # each event's own lag, at its open
    # a ran 1 ms of CPU until b was seen; b none up to its last sample, where the close leaves it.
    assert recorder.stats == [("x.py:1 f", {"py_cpu_us": 1000}), ("x.py:2 f", {"py_cpu_us": 0})]
    writer = RunWriter(recorder.open, max_event_s=0.1)
    writer.sample(0.0, a)  # CPU clock unknown: no CPU time recorded
    writer.close()
    assert len(recorder.stats) == 2


def test_a_run_records_the_time_its_thread_was_found_in_a_call():
    recorder, a, b = Recorder(), Stack("x.py:1 f", "x.py:1 f"), Stack("x.py:2 f", "x.py:2 f")
    writer = RunWriter(recorder.open, max_event_s=0.1)
    # (time, stack, the sampler's total of the times it found the thread in a call)
    for now, stack, in_call in ((0.0, a, 5_000), (0.001, a, 3_005_000), (0.002, b, 4_005_000), (0.003, a, 4_005_000)):
        recorder.now = now
        writer.sample(now, stack, 0, 0.0, in_call)
    writer.close()
    # a's run grew the total by 4 ms (up to b's first sample); b's by none: no stat
    assert recorder.stats == [("x.py:1 f", {"py_cpu_us": 0, "py_seen_blocked_us": 4000}), ("x.py:2 f", {"py_cpu_us": 0}),
                              ("x.py:1 f", {"py_cpu_us": 0})]
