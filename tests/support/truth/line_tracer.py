"""A per-line tracer: which source line was executing when torch_xla compiled, read a device value or
fell back to the CPU.

Contract: ``with LineTracer(is_traced) as tracer:`` traces every thread's Python (``sys.settrace`` and
``threading.settrace``) in the files ``is_traced(path)`` accepts (the user's script and third-party
libraries: the lines a user can act on). At each traced event it reads torch_xla's counters
(``metrics_probe``: compile count, TransferFromDevice count, the CPU-fallback counters); a change is
charged to the innermost traced line executing on that thread since the previous event (a call
returning charges the line it ran; then the caller's traced line is current again; a ``def``,
``class`` or decorator line that is its frame's first line never becomes current: a frame
standing there has not begun its body, as TorchDynamo's compiled frame, which runs its graph there). After the block:
``tracer.compiles``, ``tracer.reads`` and ``tracer.fallbacks`` are Counters of ``"file:line"`` (a
fallback's key adds ``" aten::op"``). Reads counted here include the TransferFromDevice a CPU
fallback makes (the analysis counts those as reads too). It reads counters only: no device sync.
"""
from __future__ import annotations

import linecache
import sys
import threading
from collections import Counter
from collections.abc import Callable

from tests.support.truth import metrics_probe
from tests.support.truth.table import HEADERS


class LineTracer:
    def __init__(self, is_traced: Callable[[str], bool]) -> None:
        self._traced: dict[str, bool] = {}
        self._is_traced = is_traced
        self._current: dict[int, str] = {}  # thread id -> innermost traced "file:line" now executing
        self._headers: dict[str, bool] = {}  # "file:line" -> whether it is a def, class or decorator line
        self._last = self._counts()
        self.compiles: Counter = Counter()
        self.reads: Counter = Counter()
        self.fallbacks: Counter = Counter()

    def __enter__(self) -> LineTracer:
        self._last = self._counts()
        threading.settrace(self._global)
        sys.settrace(self._global)
        sys._getframe(1).f_trace = self._local  # the caller's own frame: its lines after the `with`
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(None)
        threading.settrace(None)
        self._check(threading.get_ident())

    def _traces(self, path: str) -> bool:
        known = self._traced.get(path)
        if known is None:
            known = self._traced[path] = bool(self._is_traced(path))
        return known

    def _global(self, frame, event, arg):
        if event == "call" and self._traces(frame.f_code.co_filename):
            self._check(threading.get_ident())
            return self._local
        return None

    def _local(self, frame, event, arg):
        thread = threading.get_ident()
        self._check(thread)
        if event == "line":
            if self._executing_traced_line(frame):
                self._current[thread] = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        elif event == "return":
            caller = frame.f_back
            while caller is not None and not self._executing_traced_line(caller):
                caller = caller.f_back
            if caller is not None:
                self._current[thread] = f"{caller.f_code.co_filename}:{caller.f_lineno}"
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

    def _check(self, thread: int) -> None:
        now = self._counts()
        if now == self._last:
            return
        line = self._current.get(thread, "<untraced>")
        compiles, reads = now[0] - self._last[0], now[1] - self._last[1]
        if compiles:
            self.compiles[line] += compiles
        if reads:
            self.reads[line] += reads
        for op, count in now[2].items():
            if count != self._last[2].get(op, 0):
                self.fallbacks[f"{line} {op}"] += count - self._last[2].get(op, 0)
        self._last = now

    @staticmethod
    def _counts() -> tuple[float, float, dict[str, float]]:
        snap = metrics_probe.snapshot()
        return snap["compiles"], snap["reads"], {k: v for k, v in snap.items() if k.startswith("aten::")}
