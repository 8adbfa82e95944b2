"""A C call that keeps the GIL for a while, as ``gc.collect()`` does on a big heap: a sum over a range
(no bytecode runs inside it, so the interpreter never lets go of the GIL until it returns)."""
from __future__ import annotations

import time


def range_lasting(seconds: float) -> range:
    """A range whose ``sum()`` lasts at least ``seconds`` on this machine now."""
    count = 200_000
    while True:
        begin = time.perf_counter()
        sum(range(count))
        if time.perf_counter() - begin >= seconds:
            return range(count)
        count *= 2
