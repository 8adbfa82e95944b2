"""The read marks' stack texts (``read_calls.caller_text``), kept per stack under
``_stack_watch.stack_key``: the sampler's formatting each time, done once or twice per stack (Python
3.11 specializes a call site after its first runs, and a specialized call of a C function leaves its
frame at another instruction of the same line: a second key)."""
from __future__ import annotations

import sys
import weakref

import pytest
from collectors._stack_watch import stack_key

from collectors import read_calls, stack_runs
from collectors.stack_runs import KnownStacks, StackReader, frame_stack


READS = 20  # per call site


@pytest.fixture(autouse=True)
def no_known_texts(monkeypatch):
    monkeypatch.setattr(read_calls, "_texts", KnownStacks())


def text_here() -> tuple[str, str]:
    """What a mark writes for its caller (this frame), and the sampler's formatting of it, fresh."""
    frame = sys._getframe()
    return read_calls.caller_text(frame), StackReader().read(frame_stack(frame)).text


def read_from_two_lines() -> list[tuple[str, str]]:
    texts = []
    for _ in range(READS):
        texts.append(text_here())  # the first line
        texts.append(text_here())  # the second line
    return texts


def counting_frame_stack(monkeypatch) -> list[int]:
    calls = [0]

    def counted(frame):
        calls[0] += 1
        return frame_stack(frame)

    monkeypatch.setattr(read_calls, "frame_stack", counted)
    return calls


def test_a_marks_text_is_the_samplers_formatting_and_is_formatted_once_per_stack(monkeypatch):
    formatted = counting_frame_stack(monkeypatch)
    texts = read_from_two_lines()
    assert all(marked == fresh for marked, fresh in texts)
    first, second = {t for t, _ in texts[0::2]}, {t for t, _ in texts[1::2]}
    assert len(first) == len(second) == 1 and first != second  # one text per line, each line its own
    assert formatted[0] <= 4  # 40 reads from two stacks


def test_without_the_c_part_each_mark_formats_its_stack(monkeypatch):
    monkeypatch.setattr(read_calls, "stack_key", None)
    formatted = counting_frame_stack(monkeypatch)
    texts = read_from_two_lines()
    assert all(marked == fresh for marked, fresh in texts) and formatted[0] == 2 * READS


def key_here():
    return stack_key(sys._getframe())


def keys_of_two_lines() -> tuple[list[bytes], list[bytes]]:
    first, second = [], []
    for _ in range(READS):
        first.append(key_here())
        second.append(key_here())
    return first, second


def nested(depth: int):
    return key_here() if depth <= 1 else nested(depth - 1)


def test_a_stack_key_names_each_frames_code_and_instruction():
    first, second = keys_of_two_lines()
    assert len(set(first)) <= 2 and first[-1] == first[-2]  # the same call: one key once specialized
    assert not set(first) & set(second)  # another line of the caller
    shallow, deep = [[nested(depth) for _ in range(READS)] for depth in (1, 100)]
    assert len(deep[-1]) - len(shallow[-1]) == 99 * 16  # a code address and an instruction per frame
    assert deep[-1] == deep[-2] and len(set(deep)) <= 2  # past the key's first 64 frames
    with pytest.raises(TypeError, match="a frame object"):
        stack_key("not a frame")


class Held:
    pass


def read_holding(obj) -> weakref.ref:
    read_calls.caller_text(sys._getframe())
    return weakref.ref(obj)


def test_a_kept_text_keeps_no_frame_and_none_of_its_locals_alive():
    ref = read_holding(Held())
    assert ref() is None and len(read_calls._texts) == 1


def test_known_stacks_start_over_once_full(monkeypatch):
    monkeypatch.setattr(stack_runs, "MAX_KNOWN_STACKS", 3)
    known, stack = KnownStacks(), frame_stack(sys._getframe())
    for i in range(3):
        known.keep(bytes([i]), stack, i)
    assert len(known) == 3 and known.get(b"\x02") == 2
    known.keep(b"\x03", stack, 3)  # a process making ever new stacks: memory stays bounded
    assert len(known) == 1 and known.get(b"\x03") == 3 and known.get(b"\x02") is None
