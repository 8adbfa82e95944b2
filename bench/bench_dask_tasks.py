"""Pods: a session of many TPU-shaped workers analysed in this process and on local Dask clusters.

Run on demand (not a test):  .venv/bin/python bench/bench_dask_tasks.py [--workers 8,32,64] [--events 400000]

For each pod size it writes a session of that many workers (``tests/support/synthetic.py``'s
TPU-shaped bench capture of ``--events`` events; ``--distinct`` different captures, seeds 0..n-1,
repeated under different host names ``tpu-vm-N``), then, each in a fresh subprocess, times
``Session.open`` + ``analyze`` + the compact JSON report written as the CLI writes it (a piece at a
time, ``write_analysis_json``; here into a hash):
  in-process   the workers one after the other in the client (``--jobs 1``)
  dask-1       a local cluster of 1 worker process (its start-up included)
  dask-2       a local cluster of 2 worker processes (its start-up included)
and prints wall time, the client's peak RSS (the measuring process alone, not the cluster's
workers; also its peak once the analysis is done, before the JSON report) and the ratio of each to the in-process path; it also checks that the three JSON reports
are identical. Targets (issue 20): dask-2 at most 0.6x the in-process time at 32+ workers on a
2-core machine; the client's peak at 64 workers at most 1.2x its peak at 8.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

MODES = {"in-process": 0, "dask-1": 1, "dask-2": 2}


def _child(path: str, processes: int) -> dict:
    import resource

    from xlaprof.analysis import analyze
    from xlaprof.dask_tasks import cluster_tasks
    from xlaprof.report.json_report import write_analysis_json
    from xlaprof.session import Session

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    started = time.perf_counter()
    session = Session.open(path)
    if processes:
        with cluster_tasks(None, processes) as run_tasks:
            analysis = analyze(session, run_tasks=run_tasks)
    else:
        analysis = analyze(session)
    analysed_mb = peak_mb()
    digest = hashlib.sha256()
    write_analysis_json(analysis, digest.update)  # as the CLI writes it, a piece at a time
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "peak_mb": peak_mb(), "analysis_peak_mb": analysed_mb, "digest": digest.hexdigest()}


def _measure(path: str, processes: int) -> dict:
    code = f"import sys, json; sys.path.insert(0, {REPO!r}); from bench.bench_dask_tasks import _child; " \
           f"print(json.dumps(_child({path!r}, {processes})))"
    env = dict(os.environ, PYTHONPATH=REPO)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="8,32,64", help="pod sizes, comma-separated")
    parser.add_argument("--events", type=int, default=400_000, help="events per worker")
    parser.add_argument("--distinct", type=int, default=8, help="different captures among the workers")
    args = parser.parse_args()
    from tests.support.synthetic import bench_capture, write_session

    started = time.perf_counter()
    captures = [bench_capture(args.events, seed=seed) for seed in range(args.distinct)]
    print(f"{args.distinct} captures of {captures[0][1]:,} events ({len(captures[0][0]) / 2**20:.1f} MiB each) "
          f"built in {time.perf_counter() - started:.1f}s; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores", flush=True)
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="xlaprof-pods-") as tmp:
        for n in (int(x) for x in args.workers.split(",")):
            path = write_session(os.path.join(tmp, f"pod{n}"), "pod",
                                 {f"tpu-vm-{i}_8466": captures[i % args.distinct][0] for i in range(n)})
            results = {mode: _measure(path, processes) for mode, processes in MODES.items()}
            base = results["in-process"]
            same = len({r["digest"] for r in results.values()}) == 1
            for mode, r in results.items():
                print(f"{n:3d} workers  {mode:10s}  {r['seconds']:7.1f} s ({r['seconds'] / base['seconds']:.2f}x)  "
                      f"client peak {r['peak_mb']:6.0f} MB ({r['peak_mb'] / base['peak_mb']:.2f}x), "
                      f"{r['analysis_peak_mb']:6.0f} MB before the report", flush=True)
                peaks.setdefault(mode, {})[n] = (r["peak_mb"], r["analysis_peak_mb"])
            print(f"{n:3d} workers  JSON identical across the three: {same}; load average "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    for mode, by_n in peaks.items():
        if len(by_n) > 1:
            lo, hi = min(by_n), max(by_n)
            print(f"client peak {mode}: {hi} workers / {lo} workers = {by_n[hi][0] / by_n[lo][0]:.2f}x "
                  f"(before the report: {by_n[hi][1] / by_n[lo][1]:.2f}x)")


if __name__ == "__main__":
    main()
