"""Ctrl-C and SIGTERM in the ``xlaprof`` command: raised in the main thread as Ctrl-C is, so every
cleanup runs; held back while a step runs that must be done whole or not at all.

Contract: ``Signals()`` (the command's, made once in ``cli.main``) makes the first SIGINT or SIGTERM
raise ``Interrupted`` in the main thread; later ones, and any after ``disarm()``, are ignored, so
cleanup is never cut short and the process never dies by the signal. ``with held():`` (in the main
thread) keeps the first one back until the block ends, and raises it there: a capture's claim of its
staging directory is made and recorded together, so the cleanup it interrupts knows what to remove.
Outside the command (no ``Signals``), ``held()`` changes nothing.
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

_holding = 0  # nested held() blocks running now
_pending: int | None = None  # a signal that came while held, raised as the blocks end


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised in the main thread as Ctrl-C is, so every cleanup runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Signals:
    """The first SIGINT/SIGTERM raises ``Interrupted`` (after any ``held()`` block it came in);
    later ones are ignored."""

    def __init__(self) -> None:
        self.armed = True
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, _frame) -> None:
        global _pending
        if not self.armed:
            return
        self.armed = False
        if _holding:
            _pending = signum
        else:
            raise Interrupted(signum)

    def disarm(self) -> None:
        self.armed = False


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Run the block whole: a signal that comes during it is raised once it has ended (if it ended
    by an exception, that exception goes on and the signal is dropped: the command is ending)."""
    global _holding, _pending
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        signum = None if _holding else _pending
        if signum is not None:
            _pending = None
    if signum is not None:
        raise Interrupted(signum)
