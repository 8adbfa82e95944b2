"""What the benchmarks share: their command line and a temporary session of a given size.

Contract: ``bench_parser(doc)`` is an ``ArgumentParser`` described by the script's docstring with
``--events`` (the session's size, default 1,000,000); ``temporary_bench_session(events)`` yields
a ``BenchSession`` in a temporary logdir (the synthetic TPU-shaped capture of
``tests/support/synthetic.py``), removed afterwards; ``best_of(work, runs)`` runs ``work()``
``runs`` times and returns the fastest run's seconds and the last result. Run benchmarks from the repo root with
``.venv/bin/python bench/<script>.py``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tests.support.synthetic import write_bench_session  # noqa: E402


@dataclass(frozen=True)
class BenchSession:
    tmp: str  # the temporary directory (the logdir is inside it)
    logdir: str
    run_dir: str
    events: int
    size_bytes: int
    build_s: float  # seconds to build and write it


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the session (default 1,000,000)")
    return parser


def best_of(work, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


@contextlib.contextmanager
def temporary_bench_session(events: int) -> Iterator[BenchSession]:
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as tmp:
        started = time.perf_counter()
        logdir = os.path.join(tmp, "logdir")
        run_dir, count, size = write_bench_session(logdir, events)
        yield BenchSession(tmp, logdir, run_dir, count, size, time.perf_counter() - started)
