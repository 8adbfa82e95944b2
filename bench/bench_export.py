"""Exporting a big session to Perfetto and Chrome traces: ``xlaprof export`` of a ~1,000,000-event capture.

Run on demand (not a test):  .venv/bin/python bench/bench_export.py [--events 1000000]

It writes a one-worker TPU-shaped session of about ``--events`` events (``tests/support/
synthetic.py``'s benchmark shape), then per format, in a fresh process: reads and analyses it,
and times ``export_trace`` alone (best of 3), with the process's RSS before the export and its
peak during the export (Linux's VmHWM, reset first: what the export adds to the analysis's own
memory), the file's size, and the slices and instants written; then reads the Perfetto file
back with Perfetto's own protos and checks that it holds every slice written.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench.harness import bench_parser, best_of, temporary_bench_session  # noqa: E402

RUNS = 3
FORMATS = ("perfetto", "chrome")


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) / 1024


def _reset_peak() -> None:
    """Linux: the peak RSS (VmHWM) starts again from the current RSS."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _child(run_dir: str, fmt: str, out: str) -> dict:
    from xlaprof.analysis import analyze
    from xlaprof.export import export_trace
    from xlaprof.session import Session

    analysis = analyze(Session.load(run_dir))
    before = _status_mb("VmRSS")
    _reset_peak()
    seconds, model = best_of(lambda: export_trace(analysis, out, fmt), RUNS)
    return {"seconds": seconds, "rss_before_mb": before, "peak_mb": _status_mb("VmHWM"),
            "slices": model.slice_count, "instants": len(model.instants), "bytes": os.path.getsize(out),
            "events": analysis.session.event_count}


def _read_back(path: str) -> int:
    from tests.support.trace_readers import read_perfetto

    trace = read_perfetto(path)
    assert trace.unclosed == 0 == trace.unmatched_ends
    return sum(len(v) for v in trace.slices.values())


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0
    with temporary_bench_session(args.events) as bench:
        print(f"session: {bench.events:,} events, {bench.size_bytes / 2**20:.1f} MB capture")
        print(f"{'format':>9} | {'export s':>8} | {'slices':>9} {'instants':>8} | {'file MB':>7} | "
              f"{'RSS MB before':>13} {'peak during':>11} {'added':>5}")
        written = {}
        for fmt in FORMATS:
            out = os.path.join(bench.tmp, f"trace.{fmt}")
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", bench.run_dir, fmt, out],
                                  stdout=subprocess.PIPE, text=True, check=True, cwd=REPO)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{fmt:>9} | {r['seconds']:>8.2f} | {r['slices']:>9,} {r['instants']:>8} | "
                  f"{r['bytes'] / 2**20:>7.1f} | {r['rss_before_mb']:>13.0f} {r['peak_mb']:>11.0f} "
                  f"{r['peak_mb'] - r['rss_before_mb']:>5.0f}", flush=True)
            written[fmt] = (out, r["slices"])
        out, slices = written["perfetto"]  # last: the reader holds the whole trace as Python objects
        read = _read_back(out)
        print(f"perfetto file read back with perfetto_trace_pb2: {read:,} slices "
              f"({'all' if read == slices else 'NOT all'} of those written)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
