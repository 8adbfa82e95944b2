"""A C call that keeps the GIL for a while, as ``gc.collect()`` does on a big heap: a sum over a range
(no bytecode runs inside it, so the interpreter never lets go of the GIL until it returns)."""
from __future__ import annotations

import time


def range_lasting(seconds: float) -> range:
    """A range whose ``sum()`` lasts at least ``seconds`` on this machine now: timed at its best of
    three, so that a pause of the process while it is timed does not make it short."""
    count = 200_000
    while True:
        if min(_sum_time(count) for _ in range(3)) >= seconds:
            return range(count)
        count *= 2


def _sum_time(count: int) -> float:
    begin = time.perf_counter()
    sum(range(count))
    return time.perf_counter() - begin
