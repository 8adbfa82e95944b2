"""Per step, what torch_xla's counters and the main thread's clocks say, recorded beside a capture.

Contract: ``recorder.step(i)`` is a block around one step; each gives a row: ``step``, ``start``
(``time.time()`` seconds, the profiler's clock), ``wall_us``, ``cpu_us`` (the main thread's CPU time:
``time.thread_time``), ``runnable_us`` (the time the main thread waited for a CPU while runnable,
from its ``schedstat``: on a loaded machine Python that wants to run waits there),
``runtime_cpu_us`` (the CPU time of torch's own host threads the main thread waits for: the
autograd engine's, named ``pt_autograd_*``, from ``/proc/self/task/*/schedstat``),
``sampler_gil_us`` (how long xlaprof's stack sampler held the GIL sampling the main thread:
``stack_sampler.gil_held_ns``, 0 without a capture), and the step's ``metrics_probe.delta`` of
torch_xla's counters. Costs a few counter and ``/proc`` reads a step and reads no tensor: it may
run inside the captured window.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

from collectors import stack_sampler
from tests.support.truth import metrics_probe


RUNTIME_THREAD_PREFIX = "pt_autograd"
TASKS = "/proc/self/task"


def runnable_wait_ns() -> int:
    """How long this thread has waited on a run queue (runnable, not running), in ns."""
    with open(f"{TASKS}/{threading.get_native_id()}/schedstat") as handle:
        return int(handle.read().split()[1])


_IS_RUNTIME: dict[str, bool] = {}  # thread id -> whether it is the autograd engine's (its name read once)


def _is_runtime(tid: str) -> bool:
    if tid not in _IS_RUNTIME:
        with open(f"{TASKS}/{tid}/comm") as handle:
            _IS_RUNTIME[tid] = handle.read().startswith(RUNTIME_THREAD_PREFIX)
    return _IS_RUNTIME[tid]


def threads_cpu_ns(selected: Callable[[str], bool]) -> int:
    """CPU time (ns) used so far by this process' threads whose id (a ``/proc/self/task`` entry) is ``selected``."""
    total = 0
    for tid in os.listdir(TASKS):
        try:
            if not selected(tid):
                continue
            with open(f"{TASKS}/{tid}/schedstat") as handle:
                total += int(handle.read().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            continue
    return total


def runtime_threads_cpu_ns() -> int:
    """CPU time (ns) used so far by the autograd engine's threads of this process (each thread's name
    read once: the XLA client's pools hold dozens of threads, and reading every name at every step
    cost the step milliseconds)."""
    return threads_cpu_ns(_is_runtime)


class StepRecorder:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    @contextlib.contextmanager
    def step(self, number: int):
        before, runtime, runnable = metrics_probe.snapshot(), runtime_threads_cpu_ns(), runnable_wait_ns()
        sampler = stack_sampler.gil_held_ns(threading.get_ident())
        start, wall, cpu = time.time(), time.perf_counter(), time.thread_time()
        yield
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        sampler = stack_sampler.gil_held_ns(threading.get_ident()) - sampler
        self.rows.append({"step": number, "start": start, "wall_us": wall * 1e6, "cpu_us": cpu * 1e6,
                          "runnable_us": (runnable_wait_ns() - runnable) / 1e3,
                          "runtime_cpu_us": (runtime_threads_cpu_ns() - runtime) / 1e3,
                          "sampler_gil_us": sampler / 1e3,
                          "metrics": metrics_probe.delta(before, metrics_probe.snapshot())})
