"""Listing a logdir of many sessions after a restart: without the session index (cold) and with it (warm).

Run on demand (not a test):  .venv/bin/python bench/bench_index.py [--sessions 200] [--events 50000]

It writes ``--sessions`` one-worker sessions of about ``--events`` events each (the TPU-shaped
benchmark captures of ``tests/support/synthetic.py``: 4 chips, a read every step), then times, each in a fresh process (a
restart: nothing in memory), the listing with every session's figures (date, workers, duration,
idle share, median step: ``xlaprof.analysis.pipeline.summary.logdir_figures``, what the dashboard's
sessions page shows):
  cold:     no index yet: every session is read and analysed, and the index is written
  warm:     the index is there: every session's files are checked against it, none is read
  1 changed: one capture rewritten since: that session alone is read again
Wall time is the listing alone (imports excluded); peak RSS is the whole child process's.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

DISTINCT = 8  # distinct captures, written round-robin (each session's files are its own)


def _child(logdir: str) -> dict:
    from xlaprof.analysis.pipeline.summary import logdir_figures
    from xlaprof.session import Session

    analysed = []
    started = time.perf_counter()

    def analysis_of(run_dir):
        from xlaprof.analysis import analyze

        analysed.append(run_dir)
        return analyze(Session.load(run_dir))

    rows = logdir_figures(logdir, analysis_of=analysis_of)
    return {"seconds": time.perf_counter() - started, "sessions": len(rows), "analysed": len(analysed),
            "with_figures": sum(r.figures is not None for r in rows),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _measure(logdir: str) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", logdir], stdout=subprocess.PIPE,
                          text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _write_logdir(logdir: str, sessions: int, events: int) -> int:
    from tests.support.synthetic import bench_capture, write_session

    captures = [bench_capture(events, seed=k) for k in range(DISTINCT)]
    for n in range(sessions):
        run = write_session(logdir, f"run{n:04d}", {"localhost_9012": captures[n % DISTINCT][0]})
        stamp = 1_700_000_000 + 600 * n  # captured every 10 minutes
        os.utime(os.path.join(run, "localhost_9012.xplane.pb"), (stamp, stamp))
    return captures[0][1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--events", type=int, default=50_000, help="events per session")
    parser.add_argument("--child", metavar="LOGDIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as logdir:
        events = _write_logdir(logdir, args.sessions, args.events)
        print(f"{args.sessions} sessions of {events:,} events each")
        print(f"{'listing':<10} {'wall s':>8} {'analysed':>9} {'listed':>7} {'peak RSS MB':>12}")
        cold = _measure(logdir)
        warm = _measure(logdir)
        capture = os.path.join(logdir, "plugins", "profile", "run0000", "localhost_9012.xplane.pb")
        os.utime(capture, None)  # rewritten, as far as the index can tell
        changed = _measure(logdir)
        for name, row in (("cold", cold), ("warm", warm), ("1 changed", changed)):
            assert row["sessions"] == row["with_figures"] == args.sessions, row
            print(f"{name:<10} {row['seconds']:>8.3f} {row['analysed']:>9} {row['sessions']:>7} "
                  f"{row['peak_rss_mb']:>12.0f}", flush=True)
        print(f"warm listing: {cold['seconds'] / warm['seconds']:,.0f}x faster than cold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
