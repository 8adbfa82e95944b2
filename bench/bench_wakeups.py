"""What a wake-up of the stack sampler's C loop costs on this machine, apart from the GIL.

An emitter's ``Watcher`` (``collectors/_stack_watch.c``) samples a thread parked on an event for
``--seconds``: the thread never runs, so every sample is a sleep, a wake-up and a read of its CPU
clock, with no GIL taken. The watching thread's CPU time over its samples is what one wake-up
costs it, measured twice: with the cores idle, and while the main thread runs the demo's step
(fixed shapes, an ``.item()`` every step: the CPU device's threads busy on the cores). Prints, per
condition, the CPU per wake-up (median over ``--rounds``, with the range), the wake-ups per second
the loop got (it backs off when it wakes late, as on busy cores) and the share of a core they cost.
Run from the repo root:

    .venv/bin/python bench/bench_wakeups.py [--seconds 2] [--rounds 5] [--hz 1000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

IDLE, DEVICE_BUSY = "idle cores", "demo step running"


def watch_parked_thread(seconds: float, hz: float) -> tuple[float, float]:
    """(CPU us per wake-up, wake-ups per second) of a Watcher sampling a parked thread for ``seconds``."""
    from collectors import stack_sampler

    parked = threading.Event()
    thread = threading.Thread(target=parked.wait, daemon=True)
    thread.start()
    watcher = stack_sampler.Watcher(thread.ident, thread.native_id, 1.0 / hz, stack_sampler.LATE_S,
                                    max(stack_sampler.MAX_BACKOFF_S, 1.0 / hz))
    watcher.wait(0.01)  # the first sample reads the stack (the GIL taken once)
    samples, cpu_ns, began = watcher.samples, time.thread_time_ns(), time.perf_counter()
    watcher.wait(seconds)  # the deadline's return takes the GIL once more: one in hundreds of samples
    wakes, wall = watcher.samples - samples, time.perf_counter() - began
    cpu_us = (time.thread_time_ns() - cpu_ns) / 1e3
    parked.set()
    thread.join()
    return cpu_us / max(wakes, 1), wakes / wall


def measure(seconds: float, hz: float, step=None) -> tuple[float, float]:
    """``watch_parked_thread`` in a thread of its own, the main thread running ``step`` meanwhile."""
    result: list[tuple[float, float]] = []
    watching = threading.Thread(target=lambda: result.append(watch_parked_thread(seconds, hz)))
    watching.start()
    n = 0
    while step is not None and watching.is_alive():
        step(n)
        n += 1
    watching.join()
    return result[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds sampled per round (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per condition, alternating (default 5)")
    parser.add_argument("--hz", type=float, default=1000, help="the loop's rate (default 1000)")
    opts = parser.parse_args()
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    from collectors.demo_worker import demo_step

    step = demo_step(fixed_shapes=True, read_every=1)
    for i in range(10):  # compiles, caches
        step(i)
    figures: dict[str, list[tuple[float, float]]] = {IDLE: [], DEVICE_BUSY: []}
    for _ in range(opts.rounds):
        figures[IDLE].append(measure(opts.seconds, opts.hz))
        figures[DEVICE_BUSY].append(measure(opts.seconds, opts.hz, step))
    print(f"stack_hz={opts.hz:.0f}, {opts.rounds} rounds x {opts.seconds:.1f} s per condition, "
          f"{os.cpu_count()} cores")
    print(f"{'condition':<20}{'CPU per wake-up':>24}{'wake-ups/s':>12}{'CPU':>14}")
    for condition, rounds in figures.items():
        per_wake = sorted(us for us, _ in rounds)
        rate = statistics.median(r for _, r in rounds)
        share = statistics.median(us * r / 1e4 for us, r in rounds)  # us per wake x wakes/s, in % of a core
        print(f"{condition:<20}{statistics.median(per_wake):>9.1f} us ({per_wake[0]:.1f}-{per_wake[-1]:.1f})"
              f"{rate:>12.0f}{share:>9.1f}% core")


if __name__ == "__main__":
    main()
