"""Long captures: peak memory of the capture client and of the analysis, per million events.

Run: ``.venv/bin/python bench/bench_long_capture.py [--seconds 60]``. Starts the demo worker on the
CPU XLA device with fixed shapes (busy: a step every few ms, so the capture is dense), captures it
with the real CLI for ``--seconds``, then analyses the session with the real CLI. Each is a child
process whose peak RSS comes from ``os.wait4``. Prints events, file size, wall time and peak RSS,
and peak RSS per million events.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support.workers import REPO, DemoWorker  # noqa: E402


def measured(args: list[str]) -> tuple[float, float, str]:
    """Run a child; returns (seconds, peak RSS in MB, stdout)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.DEVNULL, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{args} failed with {os.waitstatus_to_exitcode(status)}")
    return elapsed, usage.ru_maxrss / 1024, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    logdir = tempfile.mkdtemp(prefix="xlaprof-long-")
    worker = DemoWorker("--fixed-shapes", "--seconds", "inf", debug_file=os.path.join(logdir, "debug.txt"))  # stop() ends it
    try:
        cli = [sys.executable, "-m", "xlaprof"]
        cap_s, cap_mb, out = measured([*cli, "capture", "--port", str(worker.port), "--duration",
                                       str(args.seconds), "--logdir", logdir, "--attempts", "1"])
    finally:
        worker.stop()
    session = out.strip().splitlines()[-1]
    ana_s, ana_mb, out = measured([*cli, "analyze", session, "--json"])
    report = json.loads(out)
    events = report["event_count"]
    size_mb = sum(os.path.getsize(os.path.join(session, f)) for f in os.listdir(session)
                  if f.endswith(".xplane.pb")) / 2**20
    per_m = 1e6 / max(events, 1)
    print(f"capture window {args.seconds:.0f} s of a busy CPU-device worker: {events:,} events, {size_mb:.1f} MB file")
    print(f"{'':10} {'wall s':>8} {'peak RSS MB':>12} {'MB per 1M events':>17}")
    print(f"{'capture':10} {cap_s:8.1f} {cap_mb:12.0f} {cap_mb * per_m:17.0f}")
    print(f"{'analyze':10} {ana_s:8.1f} {ana_mb:12.0f} {ana_mb * per_m:17.0f}")


if __name__ == "__main__":
    main()
