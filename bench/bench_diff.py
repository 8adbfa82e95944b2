"""Comparing two big sessions: ``xlaprof diff`` of two ~1,000,000-event captures.

Run on demand (not a test):  .venv/bin/python bench/bench_diff.py [--events 1000000]

It writes two one-worker TPU-shaped sessions of about ``--events`` events (``tests/support/
synthetic.py``'s benchmark shape: 4 chips, 50 ops per step, a recompile every 100 steps): before
with a blocking read every step, after without. Then, in a fresh process, it times each stage of
the comparison (best of 3): reading and analysing both sessions, ``diff_sessions`` (the step-time
bootstrap, 2,000 resamples per quantile, and the findings matched), and rendering the text and
JSON reports; and the real ``xlaprof diff --json`` end to end in a subprocess, with its peak RSS.
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

from bench.harness import best_of  # noqa: E402

RUNS = 3


def _best(work) -> tuple[float, object]:
    return best_of(work, RUNS)


def _child(before: str, after: str) -> dict:
    from xlaprof.analysis import analyze
    from xlaprof.analysis.compare.session_diff import diff_sessions
    from xlaprof.report import diff_json, render_diff_text
    from xlaprof.session import Session

    read_s, (a, b) = _best(lambda: (analyze(Session.load(before)), analyze(Session.load(after))))
    diff_s, diff = _best(lambda: diff_sessions(a, b))
    render_s, _ = _best(lambda: (render_diff_text(diff), json.dumps(diff_json(diff))))
    return {"read_analyse_s": read_s, "diff_s": diff_s, "render_s": render_s,
            "events": [a.session.event_count, b.session.event_count],
            "steps": [int(diff.step_time.steps.before), int(diff.step_time.steps.after)],
            "verdict": diff_json(diff)["verdict"]}


def _cli(before: str, after: str) -> dict:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "xlaprof", "diff", before, after, "--json"], capture_output=True,
                          text=True, check=True, cwd=REPO)
    seconds = time.perf_counter() - started
    json.loads(done.stdout)
    return {"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="events per session")
    parser.add_argument("--child", nargs=2, metavar=("BEFORE", "AFTER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0
    from tests.support.synthetic import bench_capture, write_bench_session, write_session

    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as logdir:
        before = write_bench_session(logdir, args.events, run="before")[0]
        after = write_session(logdir, "after", {"localhost_9012": bench_capture(args.events, read_every=0, seed=1)[0]})
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", before, after],
                               stdout=subprocess.PIPE, text=True, check=True, cwd=REPO)
        stages = json.loads(child.stdout.strip().splitlines()[-1])
        cli = _cli(before, after)
    print(f"two sessions of {stages['events'][0]:,} and {stages['events'][1]:,} events "
          f"({stages['steps'][0]:,} and {stages['steps'][1]:,} steps), best of {RUNS}:")
    print(f"  read + analyse both      {stages['read_analyse_s']:8.2f} s")
    print(f"  diff_sessions            {stages['diff_s']:8.3f} s")
    print(f"  text + JSON reports      {stages['render_s']:8.3f} s")
    print(f"xlaprof diff --json end to end (a fresh process, imports included): {cli['seconds']:.2f} s, "
          f"peak RSS {cli['peak_rss_mb']:.0f} MB")
    print(f"verdict: {stages['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
