"""Progress display for work a person waits on.

Contract: ``progress_bar`` wraps an iterable (tqdm on stderr, silent when stderr is not a
terminal unless forced). Log messages go to the one logger, ``logging.getLogger("xlaprof")``.
"""
from __future__ import annotations

import sys


def progress_bar(iterable=None, *, desc: str, total: float | None = None, unit: str = "it",
                 file=None, force: bool = False, position: int | None = None):
    from tqdm import tqdm

    stream = file or sys.stderr
    disable = not force and not getattr(stream, "isatty", lambda: False)()
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=stream, disable=disable,
                leave=False, dynamic_ncols=True, position=position)
