"""Progress display for work a person waits on.

Contract: ``progress_bar`` wraps an iterable (tqdm on stderr, silent when stderr is not a
terminal unless forced: then a ``QuietBar`` with tqdm's methods that does nothing, and tqdm is
not even imported, which a command's start-up time notices). Log messages go to the one logger, ``logging.getLogger("xlaprof")``.
"""
from __future__ import annotations

import sys


def progress_bar(iterable=None, *, desc: str, total: float | None = None, unit: str = "it",
                 file=None, force: bool = False, position: int | None = None):
    stream = file or sys.stderr
    if not force and not getattr(stream, "isatty", lambda: False)():
        return QuietBar(iterable)
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, unit=unit, file=stream,
                leave=False, dynamic_ncols=True, position=position)


class QuietBar:
    """A progress bar nobody sees: iterates ``iterable``, and takes tqdm's calls as no-ops."""

    def __init__(self, iterable=None) -> None:
        self.iterable = iterable
        self.n = 0

    def __iter__(self):
        return iter(self.iterable)

    def update(self, n: float = 1) -> None:
        self.n += n

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> QuietBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
