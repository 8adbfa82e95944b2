"""``xlaprof.trace`` and ``xlaprof.step``: named spans in the profile, with their source line.

Contract:
- ``trace(name, **meta)`` is one object usable as ``@xlaprof.trace("fwd")`` on a function and as
  ``with xlaprof.trace("fwd"):``. It records a host span named ``name`` carrying the stats
  ``source`` ("file:line" of the ``with`` statement, or of a decorated function's first line,
  which Python puts at its first decorator) and ``meta`` (numbers or short strings).
- ``step(n, name="train_step")`` is a context manager recording a step span (``step_num=n``,
  the profiler's step-root marker ``_r=1``) with its ``source``.
- Spans are plain profiler TraceMe events: unlike ``torch_xla.debug.profiler.Trace`` they push no
  IR scope, so ``torch_xla.sync()``/``xm.mark_step()`` may run inside them, and they nest. They
  never read a tensor value and never sync: the span itself calls nothing but the profiler.
- When no capture is recording, a span costs a frame lookup and one boolean check.
- ``listen_to_steps(listener)`` lets a step-scheduled capture (``collectors.inprocess``) hear
  every ``step`` open (``step_starting(n)``, before its span opens) and close (``step_ended(n)``,
  after its span closed); ``None`` stops it. Without a listener a step pays one global read.
"""
from __future__ import annotations

import functools
import sys
import threading

from collectors import torch_xla_import
from xlaprof.errors import XlaprofError
from xlaprof.xspace.vocabulary import SOURCE_STAT, STEP_NUM_STAT, STEP_ROOT_STAT, USER_SPAN_LEVEL

_step_listener = None  # the step-scheduled capture listening, if any


def listen_to_steps(listener) -> None:
    """Tell ``listener`` about every step (see the module docstring); ``None`` to stop."""
    global _step_listener
    if listener is not None and _step_listener is not None:
        raise XlaprofError("a step-scheduled xlaprof.profile(steps=...) is already active in this process")
    _step_listener = listener


def _open(name: str, source: str, meta: dict):
    profiler = torch_xla_import.profiler()
    if not profiler.TraceMe.is_enabled(USER_SPAN_LEVEL):
        return None
    return profiler.TraceMe(name, **{SOURCE_STAT: source}, **meta)


def _close(span) -> None:
    if span is not None:
        span.__exit__(None, None, None)


class trace:  # noqa: N801 - lower case: it is used like a function, as a decorator
    """A named span in the profile, as ``@xlaprof.trace("fwd")`` or ``with xlaprof.trace("fwd"):``.

    Args:
        name: the span's name, shown in the timeline and in findings.
        **meta: extra stats recorded on the span (numbers or short strings).
    The span records its source ``file:line`` (of the ``with`` statement, or the decorated
    function's first line). It never reads a tensor value and never syncs; syncs inside it are
    fine, and spans nest. Outside a capture it costs a frame lookup and one check.
    Raises ``MissingExtraError`` on first use when torch_xla is not installed.
    """

    def __init__(self, name: str, **meta) -> None:
        self.name = str(name)
        self.meta = meta
        self._open_spans = threading.local()

    def __call__(self, func):
        code = func.__code__
        source = f"{code.co_filename}:{code.co_firstlineno}"
        name, meta = self.name, self.meta

        @functools.wraps(func)
        def traced(*args, **kwargs):
            span = _open(name, source, meta)
            try:
                return func(*args, **kwargs)
            finally:
                _close(span)

        return traced

    def __enter__(self) -> trace:
        caller = sys._getframe(1)
        span = _open(self.name, f"{caller.f_code.co_filename}:{caller.f_lineno}", self.meta)
        stack = getattr(self._open_spans, "stack", None)
        if stack is None:
            stack = self._open_spans.stack = []
        stack.append(span)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        _close(self._open_spans.stack.pop())


class step:  # noqa: N801 - used like a function
    """``with xlaprof.step(n):`` marks one step, the unit of the per-step breakdown.

    Args:
        n: the step number (aligns the steps of the workers of a pod).
        name: the span's name (default ``"train_step"``; e.g. ``"infer_step"`` in inference).
        **meta: extra stats recorded on the span.
    Like ``trace``: records its source line, never syncs, may contain syncs.
    """

    def __init__(self, n: int, name: str = "train_step", **meta) -> None:
        self.n = int(n)
        self.name = str(name)
        self.meta = meta
        self._span = None

    def __enter__(self) -> step:
        caller = sys._getframe(1)
        if _step_listener is not None:
            _step_listener.step_starting(self.n)
        self._span = _open(self.name, f"{caller.f_code.co_filename}:{caller.f_lineno}",
                           {STEP_NUM_STAT: self.n, STEP_ROOT_STAT: 1, **self.meta})
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        _close(self._span)
        self._span = None
        if _step_listener is not None:
            _step_listener.step_ended(self.n)
