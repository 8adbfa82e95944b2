"""A process that keeps one CPU busy, as another job on a shared host does."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def spinning(core: int | None = None) -> Iterator[subprocess.Popen]:
    """A Python process spinning on a CPU (on ``core`` alone where given) until the block ends."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        if core is not None:
            os.sched_setaffinity(spinner.pid, {core})
        yield spinner
    finally:
        spinner.kill()
        spinner.wait()
