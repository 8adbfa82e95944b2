"""What tripping the main thread costs the process's other Python threads.

While the main thread sits in a C call that lets the GIL go, a call the tripping thread asked for
stays pending, and Python up to 3.12 leaves the interpreter's flag set for the other threads, which
find nothing to do at their checks (collectors/_stack_watch.c's header). This measures it: a thread
runs a pure-Python loop while the main thread hashes 64 MB blocks (each call lets the GIL go for
about 0.1 s; between them it runs Python, so the tripping thread asks again), with a tripping
Watcher of the main thread and without one, in alternating rounds. It prints the loop's speed in
blocks of 1,000 iterations a second per round, and the medians.

    .venv/bin/python bench/bench_other_threads.py [--rounds 6] [--seconds 2]
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import threading
import time

from collectors._stack_watch import Watcher
from collectors.stack_sampler import LATE_S, MAX_BACKOFF_S, REFRESH_S

PERIOD_S = 0.001  # the sampler's default rate, 1 kHz
BLOCK = bytes(64 << 20)


def _python_loop(stop: threading.Event, out: list[float]) -> None:
    blocks, began, total = 0, time.perf_counter(), 0
    while not stop.is_set():
        for i in range(1000):
            total += i & 3
        blocks += 1
    out.append(blocks / (time.perf_counter() - began))


def _tripping_emitter(stop: threading.Event) -> threading.Thread:
    """A tripping Watcher of the main thread, waited on as the sampler's emitter does."""
    main = threading.main_thread()
    watcher = Watcher(main.ident, main.native_id, PERIOD_S, LATE_S, MAX_BACKOFF_S, trips=True)

    def emit() -> None:
        while not stop.is_set():
            watcher.wait(REFRESH_S)
        watcher.close()
    thread = threading.Thread(target=emit, daemon=True)
    thread.start()
    return thread


def one_round(tripped: bool, seconds: float) -> float:
    """The other thread's speed (blocks/s) while the main thread hashes for ``seconds``."""
    stop, out = threading.Event(), []
    emitter = _tripping_emitter(stop) if tripped else None
    loop = threading.Thread(target=_python_loop, args=(stop, out))
    loop.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        hashlib.sha256(BLOCK).digest()
    stop.set()
    loop.join()
    if emitter is not None:
        emitter.join()
    return out[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6, help="rounds per condition (default 6)")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of a round (default 2 s)")
    args = parser.parse_args()
    speeds: dict[bool, list[float]] = {False: [], True: []}
    for k in range(args.rounds):
        for tripped in ((False, True) if k % 2 == 0 else (True, False)):
            speeds[tripped].append(one_round(tripped, args.seconds))
            print(f"round {k + 1}  {'tripped' if tripped else 'alone  '}  {speeds[tripped][-1]:9,.0f} blocks/s",
                  flush=True)
    alone, tripped = statistics.median(speeds[False]), statistics.median(speeds[True])
    print(f"median: alone {alone:,.0f} blocks/s, main thread tripped {tripped:,.0f} "
          f"({100 * (tripped / alone - 1):+.1f}%)")


if __name__ == "__main__":
    main()
