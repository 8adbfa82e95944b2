"""Python stacks read from frames and coalesced into runs: the pure part of the stack sampler.

Contract:
- ``StackReader().read(stack, changed=None, kept=0)`` returns the ``Stack`` of a thread whose stack
  is ``stack``: (code object, line) pairs, innermost first, as ``_stack_watch.Watcher.wait`` returns
  them (``frame_stack(frame)`` makes them from a frame of the caller's own thread: a frame of another
  thread is never held, as it would keep the locals of a function that thread left alive, tensors
  too, through its next sync). ``text`` holds its frames outermost first, joined by "\\n", each
  "path:line function" (path as the code object has it, function its qualified name), and
  ``label`` the innermost frame as "file.py:line function" (the path's basename). A reader
  follows one thread: it formats the ``changed`` innermost frames (all of them when ``None``)
  and takes the ``kept`` outermost ones from its previous read, as the sampler's C loop tells
  (``_stack_watch.Watcher``: ``depth - kept`` and ``kept``; more kept frames than the previous
  read had means another previous read, and the whole stack is formatted). It returns the
  previous ``Stack`` when the text came out equal (so equal stacks are the same object), and
  holds text between calls, never a frame. An innermost frame of a code passed to
  ``hide_innermost`` (xlaprof's own wrapper, e.g. ``read_calls``' kernel) is left out: the stack is its caller's.
  ``read(..., key=watcher.key)`` (bytes naming the stack, ``_stack_watch.Watcher.key``) formats a
  stack once: a stack read before under that key, by any reader, is not formatted again.
  ``read_stacks()`` is the dict of those stacks by key, to pass as ``Watcher.wait(timeout_s, known)``,
  which returns a stack found there as its ``KnownStack`` entry (no pairs built): ``read`` takes it
  in place of the pairs.
- ``KnownStacks()`` keeps a value per stack key (``get(key)``, ``keep(key, stack, value)``), with the
  stack's (code, line) pairs (a ``KnownStack`` per key, in the dict ``entries``): a key holding code
  addresses stays unique while its codes live. It starts over at ``MAX_KNOWN_STACKS`` (a process
  making ever new stacks).
- Text is TraceMe-safe (``safe_text``): characters at which the profiler's
  "name#key=value,...#" metadata encoding cuts a value (``, # ' "``, and brackets left open)
  become "?".
- ``RunWriter(open_event, max_event_s)`` turns a thread's samples ``(time_s, Stack, cpu_ns, lag_us)``
  into runs: ``open_event(stack, lag_us)`` opens an event at the first sample of a stack, ``lag_us``
  after the sample was taken (the event records it: the run began that much earlier); the event closes
  (``event.__exit__``, as a TraceMe does) at the first sample of another stack, at ``close()``, or once it is
  ``max_event_s`` old, when it is reopened at once with the same stack. Events never overlap.
  ``cpu_ns`` is the sampled thread's CPU time at the sample (-1 where unknown): an event closes with
  the CPU time its thread used during the run (``event.set_metadata(py_cpu_us=...)``), which tells a
  thread running Python from one blocked on that line (a sleep, a queue, a read). ``seen_blocked_ns``
  is the sampler's total of the times it found the thread blocked in a call (a sleep, a read, a wait)
  at a sample: an event closes with its growth over the run (``py_seen_blocked_us``, where it grew),
  which tells a line whose call blocks from one the thread was off the CPUs at, unseen, between two
  samples.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import CodeType
from dataclasses import dataclass
from typing import Protocol

from xlaprof.xspace.vocabulary import PY_CPU_STAT, PY_SEEN_BLOCKED_STAT

_UNSAFE = str.maketrans({c: "?" for c in ",#'\""})
_OPENER_OF = {")": "(", "]": "[", "}": "{"}


def safe_text(text: str) -> str:
    """``text`` with the characters that TraceMe metadata cannot carry replaced by "?": commas,
    hashes and quotes, and the brackets that open without closing (the profiler's parser keeps
    a stack of them, and a value that leaves one open swallows the stats after it)."""
    text = text.translate(_UNSAFE)
    if "(" not in text and "[" not in text and "{" not in text:
        return text
    unclosed: list[tuple[str, int]] = []
    for i, char in enumerate(text):
        if char in "([{":
            unclosed.append((char, i))
        elif unclosed and _OPENER_OF.get(char) == unclosed[-1][0]:
            unclosed.pop()
    if not unclosed:
        return text
    chars = list(text)
    for _, i in unclosed:
        chars[i] = "?"
    return "".join(chars)


@dataclass(frozen=True)
class Stack:
    text: str  # frames outermost first, "path:line function", joined by "\n"
    label: str  # the innermost frame, "file.py:line function"


_MAX_CODES = 20_000  # code objects whose texts are kept (a process that makes code without end starts over)
# id(code) -> (code, "path:", " function", "file.py:"), TraceMe-safe. Keyed by id: a code object's
# own hash is computed anew from its bytecode and constants at each lookup (Python 3.11), and the
# entry holds its code, so no other code object can have that id while the entry lasts.
_code_texts: dict[int, tuple] = {}


def _texts_of(code) -> tuple:
    """The parts of a frame's text that depend on its code only, made safe once per code object
    (safe parts stay safe joined: none leaves a bracket open): (code, "path:", " function", "file.py:")."""
    texts = _code_texts.get(id(code))
    if texts is None:
        if len(_code_texts) >= _MAX_CODES:
            _code_texts.clear()
        name = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
        texts = _code_texts[id(code)] = (code, safe_text(code.co_filename) + ":", " " + safe_text(name),
                                         safe_text(os.path.basename(code.co_filename)) + ":")
    return texts


_hidden_codes: set = set()  # code objects of xlaprof's own frames that a stack leaves out (innermost only)


def hide_innermost(code) -> None:
    """Leave frames of ``code`` out of the stacks read when they are innermost (a wrapper of
    xlaprof's own around a call, e.g. the read-marking kernel: the sampled line is its caller's)."""
    _hidden_codes.add(code)


MAX_KNOWN_STACKS = 2_000  # about 6 KB each (30 frames): at most about 12 MB per KnownStacks


class KnownStack:
    """A stack's value, with the stack's (code, line) pairs: they keep its codes, and so its key, unique."""

    __slots__ = ("pairs", "value")

    def __init__(self, pairs: Sequence[tuple[CodeType, int]], value) -> None:
        self.pairs, self.value = pairs, value


class KnownStacks:
    """A value per stack, by a key naming the stack (code addresses and positions). ``entries`` is the
    dict of key -> ``KnownStack`` itself (the same dict for the object's life)."""

    def __init__(self) -> None:
        self.entries: dict[bytes, KnownStack] = {}

    def get(self, key: bytes):
        known = self.entries.get(key)
        return None if known is None else known.value

    def __len__(self) -> int:
        return len(self.entries)

    def keep(self, key: bytes, stack: Sequence[tuple[CodeType, int]], value) -> None:
        if len(self.entries) >= MAX_KNOWN_STACKS:
            self.entries.clear()
        self.entries[key] = KnownStack(stack, value)


_read_stacks = KnownStacks()  # Watcher.key -> (lines, Stack) of the stacks the readers formatted


def read_stacks() -> dict[bytes, KnownStack]:
    """The stacks the readers formatted, by ``Watcher.key``: ``Watcher.wait``'s ``known``."""
    return _read_stacks.entries


class StackReader:
    """Reads one thread's stacks, formatting only the frames that changed since its previous read."""

    def __init__(self) -> None:
        self._lines: list[str] = []  # the formatted frames of the previous read, outermost first
        self._stack: Stack | None = None

    def read(self, stack: Sequence[tuple[CodeType, int]] | KnownStack, changed: int | None = None, kept: int = 0,
             key: bytes | None = None) -> Stack:
        known = stack.value if type(stack) is KnownStack else _read_stacks.get(key) if key is not None else None
        if known is not None:
            lines, read = known
            if self._stack is not None and read is not self._stack and read.text == self._stack.text:
                read = self._stack  # the previous read's text: its Stack, as below
            self._lines, self._stack = lines, read
            return read
        read = self._format(stack, changed, kept)
        if key is not None:
            _read_stacks.keep(key, stack, (self._lines, read))
        return read

    def _format(self, stack: Sequence[tuple[CodeType, int]], changed: int | None, kept: int) -> Stack:
        if stack[0][0] in _hidden_codes and len(stack) > 1:  # xlaprof's own frame, innermost
            stack, changed = stack[1:], None if changed is None else max(changed - 1, 0)
        if kept > len(self._lines):  # not the previous read the caller compared with: read it all
            changed, kept = None, 0
        lines = self._lines[:kept]
        for code, line in reversed(stack if changed is None else stack[:changed]):
            _, path, name, _ = _texts_of(code)
            lines.append(f"{path}{line or 0}{name}")
        self._lines = lines
        text = "\n".join(lines)
        if self._stack is None or text != self._stack.text:
            code, line = stack[0]
            _, _, name, file = _texts_of(code)
            self._stack = Stack(text, f"{file}{line or 0}{name}")
        return self._stack


def frame_stack(frame) -> tuple[tuple[CodeType, int], ...]:
    """The (code, line) pairs of ``frame`` and its callers, innermost first: ``StackReader.read``'s
    input, made from a frame of the caller's own thread."""
    pairs = []
    while frame is not None:
        pairs.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return tuple(pairs)


class Event(Protocol):  # what the profiler's TraceMe is: an event open from its creation
    def set_metadata(self, **stats) -> None: ...

    def __exit__(self, exc_type, exc, tb) -> None: ...


class RunWriter:
    """One thread's samples as events, one per run of identical stacks, none older than max_event_s."""

    def __init__(self, open_event: Callable[[Stack, float], Event], max_event_s: float) -> None:
        self._open_event = open_event
        self._max_event_s = max_event_s
        self._event: Event | None = None
        self._stack: Stack | None = None
        self._opened_s = 0.0
        self._opened_clocks = self._clocks = (-1, 0)

    def sample(self, now_s: float, stack: Stack, cpu_ns: int = -1, lag_us: float = 0.0,
               seen_blocked_ns: int = 0) -> None:
        clocks = (cpu_ns, seen_blocked_ns)
        if self._event is not None:
            if stack is self._stack and now_s - self._opened_s < self._max_event_s:
                self._clocks = clocks
                return
            self._close(clocks)
        self._event = self._open_event(stack, lag_us)
        self._stack, self._opened_s = stack, now_s
        self._opened_clocks = self._clocks = clocks

    def close(self) -> None:
        """Close the open event, with the clocks of its last sample."""
        self._close(self._clocks)

    def _close(self, clocks: tuple[int, int]) -> None:
        event, self._event, self._stack = self._event, None, None
        if event is None:
            return
        (cpu_from, blocked_from), (cpu_to, blocked_to) = self._opened_clocks, clocks
        stats = {}
        if 0 <= cpu_from <= cpu_to:
            stats[PY_CPU_STAT] = round((cpu_to - cpu_from) / 1000)
        if blocked_to - blocked_from >= 1000:  # most runs were never seen blocked: no stat
            stats[PY_SEEN_BLOCKED_STAT] = round((blocked_to - blocked_from) / 1000)
        if stats:
            event.set_metadata(**stats)
        event.__exit__(None, None, None)
