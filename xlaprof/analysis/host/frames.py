"""Python stacks as the stack sampler records them, and the frame a user can act on.

Contract:
- ``parse_stack(text)``: a ``py_stack`` stat ("path:line function" per frame, outermost first,
  joined by newlines) as a ``PyStack``. Lines that are not frames are skipped.
- ``PyStack.source``: the innermost frame outside the framework (``xlaprof.framework_files``:
  torch, torch_xla, the standard library, xlaprof's instrumentation), as "file:line". Library
  code (diffusers, transformers) counts as the user's: its line is where the fix starts. A frame
  standing at its function's ``def`` (or a class's ``class``, or a decorator) line has not begun
  its body (the sampler caught the call being made; TorchDynamo's compiled frame runs its graph
  there, at its function's first line): the line it stands for is its caller's, so it is passed
  over where the file is readable here.
  ``PyStack.waits_for_a_thread``: its innermost frame is the standard library's wait for another
  thread (``threading``'s locks, conditions, events and joins, ``queue``'s get and put, a future's
  result), or one of its innermost frames ``multiprocessing``'s wait for another process (a
  DataLoader's worker processes, through a connection's poll or a queue's get): the thread is
  blocked on what another thread or process does, not on its own line.
  ``PyStack.in_runtime``: its innermost frame is torch's or torch_xla's (a wait there is the
  runtime at work). ``PyStack.torch_frame``: that innermost frame, where it is torch's Python below
  ``source`` (a check that ``torch.distributions`` makes), else None. ``PyStack.in_data_loader``: a
  frame is torch's DataLoader fetching a batch on this thread (``_SingleProcessDataLoaderIter``,
  ``num_workers=0``: the dataset's ``__getitem__`` and the collate run here; a loader with workers
  only receives their batches). ``PyStack.to_source``: the frames from the outermost down to
  ``source`` (the user's call site is among them), each "file:line function". ``PyStack.caller``: the nearest frame above ``source``
  in another non-framework file (``train.py:42`` for a read inside a library), or None.
  ``PyStack.call_site_index``: the innermost frame in the user's own code (neither framework nor a
  library's), where a line inside a library is fixed; -1 without one. Like ``source``, ``caller`` and
  the call site pass over a frame standing at its ``def``, ``class`` or decorator line.
- ``line_text(location)``: the stripped text of "file:line" when the file is readable here: a
  local regular file of at most ``MAX_SOURCE_BYTES`` (a path named in a capture is never a FIFO
  or device that would block, nor a URL), else None.
- ``short_location(location)``: "file.py:42" from "/a/b/file.py:42" (also Windows paths; "" for None).
"""
from __future__ import annotations

import linecache
import os
import re
import stat
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from xlaprof.framework_files import is_data_loader_file, is_framework_file, is_library_file, is_torch_file

MAX_SOURCE_BYTES = 16 * 2**20  # a source file larger than this is not shown, only named
# The standard library's modules whose waits are for another thread (see PyStack.waits_for_a_thread).
_THREAD_WAIT_FILES = ("/threading.py", "/queue.py", "/concurrent/futures/_base.py")
# The DataLoader's iterator that fetches batches on its own thread (num_workers=0; see PyStack.in_data_loader).
_IN_THREAD_LOADER = "_SingleProcessDataLoaderIter"
# ... and those that wait for another process (a DataLoader's workers), calling a select or poll.
_PROCESS_WAIT_FILES = ("/multiprocessing/connection.py", "/multiprocessing/queues.py")
_PROCESS_WAIT_DEPTH = 4  # innermost frames searched for such a wait
_AUTOGRAD_ENTRY = "/torch/autograd/"  # the engine's callers: backward(), autograd.grad()
_FRAME = re.compile(r"^(.+):(\d+)(?: (.*))?$")  # "path:line function"; a path may hold spaces


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def label(self) -> str:
        return f"{self.file}:{self.line} {self.function}"


@dataclass(frozen=True)
class PyStack:
    frames: tuple[Frame, ...]  # outermost first

    @cached_property
    def source_index(self) -> int:
        return self._innermost(len(self.frames), is_framework_file)

    @cached_property
    def call_site_index(self) -> int:
        """The innermost frame in the user's own code: neither framework nor library (-1 without one)."""
        return self._innermost(len(self.frames), lambda path: is_framework_file(path) or is_library_file(path))

    def _innermost(self, below: int, passed_over: Callable[[str], bool]) -> int:
        """The innermost frame above ``below`` whose file ``passed_over`` does not take and that stands
        in its function's body (not at its ``def``, ``class`` or decorator line), or -1."""
        for i in range(below - 1, -1, -1):
            frame = self.frames[i]
            if not passed_over(frame.file) and not _is_header(frame.location):
                return i
        return -1

    @property
    def waits_for_a_thread(self) -> bool:
        if not self.frames:
            return False
        path = self.frames[-1].file.replace("\\", "/")
        if is_framework_file(path) and path.endswith(_THREAD_WAIT_FILES):
            return True
        return any(f.file.replace("\\", "/").endswith(_PROCESS_WAIT_FILES) for f in self.frames[-_PROCESS_WAIT_DEPTH:])

    @property
    def in_runtime(self) -> bool:
        """Whether the innermost frame is torch's or torch_xla's: a wait there is the runtime's work
        (``loss.backward()`` waits for the autograd engine's device thread, which traces the backward)."""
        return bool(self.frames) and is_torch_file(self.frames[-1].file)

    @property
    def in_data_loader(self) -> bool:
        return any(is_data_loader_file(f.file) and f.function.startswith(_IN_THREAD_LOADER) for f in self.frames)

    @property
    def torch_frame(self) -> Frame | None:
        """The innermost frame where it is torch's Python below ``source`` (the read that
        ``torch.distributions`` makes to check its arguments, under the user's ``Categorical(...)``),
        else None (and None where it is ``backward()`` waiting for the autograd engine's threads)."""
        innermost = self.frames[-1] if self.frames else None
        if innermost is None or self.source_index < 0 or not is_torch_file(innermost.file):
            return None  # (a torch frame is never the source: the source is below it only where there is one)
        return None if self.in_autograd_engine else innermost  # backward() waits for the engine's threads

    @property
    def in_autograd_engine(self) -> bool:
        """Whether the innermost frame is the autograd engine's entry (``backward()``, ``autograd.grad()``
        waiting for the engine's threads)."""
        return bool(self.frames) and _AUTOGRAD_ENTRY in self.frames[-1].file.replace("\\", "/")

    @property
    def source(self) -> str | None:
        i = self.source_index
        return self.frames[i].location if i >= 0 else None

    @property
    def to_source(self) -> tuple[str, ...]:
        i = self.source_index
        return tuple(f.label for f in self.frames[: i + 1]) if i >= 0 else ()

    @property
    def caller(self) -> str | None:
        i = self.source_index
        if i < 0:
            return None
        own = self.frames[i].file
        above = self._innermost(i, lambda path: path == own or is_framework_file(path))
        return self.frames[above].location if above >= 0 else None


def parse_stack(text: str) -> PyStack:
    matches = (_FRAME.match(entry) for entry in text.split("\n"))
    return PyStack(tuple(Frame(m[1], int(m[2]), m[3] or "") for m in matches if m))


def line_text(location: str | None) -> str | None:
    if not location:
        return None
    file, _, line = location.rpartition(":")
    if not line.isdigit():
        return None
    if not _small_regular_file(file):  # a path from a capture: never a FIFO, a device, a huge file
        return None
    text = linecache.getline(file, int(line)).strip()
    return text or None


_HEADER = re.compile(r"^((async\s+def|def|class)\s|@)")


def _is_header(location: str) -> bool:
    """Whether the line at ``location`` is a ``def``, ``class`` or decorator line (False where unreadable)."""
    return bool(_HEADER.match(line_text(location) or ""))


def _small_regular_file(path: str) -> bool:
    """Whether ``path`` is a local regular file of at most ``MAX_SOURCE_BYTES`` (linecache reads it whole)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_SOURCE_BYTES


def short_location(location: str | None) -> str:
    return (location or "").replace("\\", "/").rsplit("/", 1)[-1]
