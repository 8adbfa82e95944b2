"""A per-line tracer: which source line was executing when torch_xla compiled, read a device value or
fell back to the CPU.

Contract: ``with LineTracer(is_traced) as tracer:`` traces every thread's Python (``sys.settrace`` and
``threading.settrace``; threads started before the block only where ``tracer.follow_new_threads()``
was called before they started, whose lines it then follows from their start, so that a loop begun
before the block has its line current) in the files ``is_traced(path)`` accepts (the user's script and third-party
libraries: the lines a user can act on). It reads torch_xla's counters (``metrics_probe``: compile
count, TransferFromDevice count, the CPU-fallback counters) at each traced event of the thread that
entered the block (the training thread), and on any thread back from a silence (no Python call or
line for ``SILENCE_S``: a C call); a change is charged to the innermost traced line executing on
that thread since its previous event (a call returning charges the line it ran; then the caller's
traced line is current again, or none where no traced frame is left on the thread's stack; a
``def``, ``class`` or decorator line that is its frame's first line never becomes current: a frame
standing there has not begun its body, as TorchDynamo's compiled frame, which runs its graph there).
A read is one C call, so it is charged only to a thread silent through its transfer
(TransferFromDeviceTime's samples give each read's start and end) at a line it can name (the
training thread at any). Where another such thread was silent through it too, the read is that
thread's if it comes back from that silence first, or within ``RETURN_S`` of the training thread
seeing the change (a ``run_async`` step closure's ``.item()`` while the training thread waited in
``loss.backward()``, or traced on); else the training thread's, at the line it was silent on then
(its last silence through it, where it came back in untraced code, and read no counters). After the block:
``tracer.compiles``, ``tracer.reads`` and ``tracer.fallbacks`` are Counters of ``"file:line"`` (a
fallback's key adds ``" aten::op"``). Reads counted here include the TransferFromDevice a CPU
fallback makes (the analysis counts those as reads too). It reads counters only: no device sync.
"""
from __future__ import annotations

import linecache
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from tests.support.truth import metrics_probe
from tests.support.truth.table import HEADERS


UNTRACED = "<untraced>"
SILENCE_S = 20e-6  # a thread's time between two events longer than this may hold a read
# A reading thread is back within this of the training thread, which let the GIL go in its next op.
RETURN_S = 0.002
SILENCES_KEPT = 256  # the training thread's last silences, for the reads no other thread claims


@dataclass
class _PendingRead:
    began: float  # its transfer's start and end, wall-clock seconds
    ended: float
    line: str | None = None  # the training thread's line, silent through it too, if no other comes back
    until: float = float("inf")  # by when another thread must come back from it (wall-clock seconds)


class LineTracer:
    def __init__(self, is_traced: Callable[[str], bool]) -> None:
        self._traced: dict[str, bool] = {}
        self._is_traced = is_traced
        self._current: dict[int, str] = {}  # thread id -> innermost traced "file:line" now executing
        self._headers: dict[str, bool] = {}  # "file:line" -> whether it is a def, class or decorator line
        self._seen: dict[int, float] = {}  # thread id -> wall-clock time (s) of its latest traced event
        self._pending: list[_PendingRead] = []
        self._silences: deque = deque(maxlen=SILENCES_KEPT)  # the training thread's: (start, end, line)
        self._checker = -1  # the thread that entered the block, which reads the counters
        self._counting = False
        self._last = self._counts()
        self.compiles: Counter = Counter()
        self.reads: Counter = Counter()
        self.fallbacks: Counter = Counter()

    def follow_new_threads(self) -> None:
        """Trace the threads started from now on (before the workload starts its own: a ``run_async``
        step closure's, a loader's), counting only inside the block: Python 3.11 can trace a thread
        only from its start."""
        threading.settrace(self._global)

    def __enter__(self) -> LineTracer:
        self._checker = threading.get_ident()
        self._counting = True
        self._last = self._counts()
        threading.settrace(self._global)
        sys.settrace(self._global)
        sys._getframe(1).f_trace = self._local  # the caller's own frame: its lines after the `with`
        return self

    def __exit__(self, *exc) -> None:
        self._counting = False
        sys.settrace(None)
        threading.settrace(None)
        self._event(self._checker)
        # Reads no other thread came back from: the training thread's, at the line it was silent on
        # through the transfer (a read in untraced code: back in it, the thread read no counters).
        for read in self._pending:
            self.reads[read.line or self._held(read.began, read.ended)] += 1
        self._pending = []

    def _traces(self, path: str) -> bool:
        known = self._traced.get(path)
        if known is None:
            known = self._traced[path] = bool(self._is_traced(path))
        return known

    def _global(self, frame, event, arg):
        traced = event == "call" and self._traces(frame.f_code.co_filename)
        if self._counting:
            self._event(threading.get_ident(), check=traced)  # Python in an untraced file: not inside a read
        # Traced from before the block too (a loop a followed thread began then): its lines are current.
        return self._local if traced else None

    def _local(self, frame, event, arg):
        thread = threading.get_ident()
        if self._counting:
            self._event(thread)
        if event == "line":
            if self._executing_traced_line(frame):
                self._current[thread] = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        elif event == "return":
            caller = frame.f_back
            while caller is not None and not self._executing_traced_line(caller):
                caller = caller.f_back
            # Back in untraced code only (a loader thread's library loop): no line of its own.
            self._current[thread] = f"{caller.f_code.co_filename}:{caller.f_lineno}" if caller else UNTRACED
        return self._local

    def _executing_traced_line(self, frame) -> bool:
        """Whether ``frame`` is in a traced file at a line of its body: at its own first line, when that is a
        ``def``, ``class`` or decorator line, a frame runs none of its body (TorchDynamo's compiled frame
        runs its graph there), and the line executing is still its caller's."""
        path = frame.f_code.co_filename
        if not self._traces(path):
            return False
        if frame.f_lineno != frame.f_code.co_firstlineno:  # a decorator line elsewhere: a call being made there
            return True
        line = f"{path}:{frame.f_lineno}"
        known = self._headers.get(line)
        if known is None:
            known = self._headers[line] = linecache.getline(path, frame.f_lineno).lstrip().startswith(HEADERS)
        return not known

    def _event(self, thread: int, check: bool = True) -> None:
        """A Python event on ``thread``, before it moves on. The training thread reads the counters at its
        traced events (and records its silences); another thread where it comes back from a silence."""
        now = time.time()
        last = self._seen.get(thread, now)
        back = now - last > SILENCE_S
        if back and thread == self._checker:
            self._silences.append((last, now, self._current.get(thread, UNTRACED)))
        elif back and self._pending:
            self._back(thread, last, now)
        if self._pending:
            self._expire(now)
        if (check and thread == self._checker) or (back and thread != self._checker):
            self._check(thread, last, now)
        self._seen[thread] = now

    def _check(self, thread: int, last: float, now: float) -> None:
        counts = self._counts()
        if counts == self._last:
            return
        line = self._current.get(thread, UNTRACED)
        compiles, reads = counts[0] - self._last[0], int(counts[1] - self._last[1])
        if compiles:
            self.compiles[line] += compiles
        # A read is this thread's if it was silent through the transfer (on a line it can name, for a
        # thread other than the training thread) and, for the training thread, no other was; else it
        # waits for the other thread to come back from it (in time, where the training thread was silent).
        own = thread == self._checker or line != UNTRACED
        for began, ended in metrics_probe.recent_reads(reads):
            others = any(seen <= began and other != thread and self._current.get(other, UNTRACED) != UNTRACED
                         for other, seen in self._seen.items())  # another thread silent through it
            if own and last <= began and not (others and thread == self._checker):
                self.reads[line] += 1
            elif own and last <= began:  # the training thread's, unless the other comes back right after
                self._pending.append(_PendingRead(began, ended, line, now + RETURN_S))
            elif others:
                self._pending.append(_PendingRead(began, ended))
            else:
                self.reads[self._held(began, ended)] += 1
            reads -= 1
        if reads:  # more reads than the metric's samples hold
            self.reads[line] += reads
        for op, count in counts[2].items():
            if count != self._last[2].get(op, 0):
                self.fallbacks[f"{line} {op}"] += count - self._last[2].get(op, 0)
        self._last = counts

    def _held(self, began: float, ended: float) -> str:
        """The line of the training thread's latest recorded silence through a transfer, else its line now."""
        held = [line for start, end, line in self._silences if start <= began and ended <= end]
        return held[-1] if held else self._current.get(self._checker, UNTRACED)

    def _expire(self, now: float) -> None:
        """The reads the training thread was silent through too, that no other thread came back from in
        time: the training thread's."""
        for read in self._take(lambda read: read.until < now):
            self.reads[read.line] += 1

    def _back(self, thread: int, last: float, now: float) -> None:
        """``thread`` came back from a silence since ``last``: the pending reads it was silent through are
        its own, at the line it was silent on."""
        line = self._current.get(thread, UNTRACED)
        if line == UNTRACED:
            return
        mine = self._take(lambda read: last <= read.began and read.ended <= now)
        if mine:
            self.reads[line] += len(mine)

    def _take(self, belongs: Callable[[_PendingRead], bool]) -> list[_PendingRead]:
        """Take the pending reads ``belongs`` accepts out of the pending ones, and return them."""
        taken = [read for read in self._pending if belongs(read)]
        if taken:
            self._pending = [read for read in self._pending if not belongs(read)]
        return taken

    @staticmethod
    def _counts() -> tuple[float, float, dict[str, float]]:
        snap = metrics_probe.snapshot()
        return snap["compiles"], snap["reads"], {k: v for k, v in snap.items() if k.startswith("aten::")}
