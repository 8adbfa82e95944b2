"""The truth score over the corpus: xlaprof's analysis against an oracle it did not compute.

    .venv/bin/python bench/bench_truth.py [--cases a,b] [--workdir DIR] [--reuse] [--grouped] [--pods N]

Runs every corpus case (``tests/support/corpus``) twice (``tests.support.truth.runner``: once captured
with torch_xla's per-step counters beside it, each case in a process of its own as a user runs it, or
with ``--grouped`` in the suite's few processes; once under a line tracer), analyses each capture and
prints, per case: each cause's share of idle (xlaprof vs truth, and the difference in points), reads
and compiles at their triggering line (share of the truth's, and the counts), findings misplaced at a
``def``/``class``/decorator line or in xlaprof's own code, whether the recompile explanation names the values
that changed, and whether the advice fits. ``--reuse`` scores the records already in ``--workdir``.
Then the pod (``tests/support/truth/pod_run.py``), captured ``--pods`` times on a quiet host and as
many beside a process spinning on a CPU: per capture the stragglers, why the first is slower
(``excess_cause``) and what dominates its steps (``main_cause``), the workers of the blocked finding
at the loader's sleep, and whether all of it is the truth (the sleeper alone, blocked, on it alone).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support.corpus.cases import CASES  # noqa: E402
from tests.support.truth.corpus_run import load_records, record_corpus, score_corpus  # noqa: E402
from tests.support.truth.pod_run import capture_sleeping_pod, score_pod  # noqa: E402
from xlaprof.analysis import analyze  # noqa: E402
from xlaprof.report import analysis_json  # noqa: E402
from xlaprof.session import Session  # noqa: E402

SHORT = {"compile": "comp", "transfer_from_device": "read", "host_tracing": "trace", "host_blocked": "block"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(c.name for c in CASES))
    parser.add_argument("--workdir")
    parser.add_argument("--reuse", action="store_true", help="score the records already in --workdir")
    parser.add_argument("--grouped", action="store_true",
                        help="capture the cases in the suite's groups, a process each, not a process a case")
    parser.add_argument("--pods", type=int, default=2, help="pod captures per load (quiet, busy); 0: none")
    opts = parser.parse_args()
    workdir = opts.workdir or tempfile.mkdtemp(prefix="xlaprof-truth-")
    os.makedirs(workdir, exist_ok=True)
    names = opts.cases.split(",")
    records = load_records(workdir) if opts.reuse else record_corpus(workdir, names, apart=not opts.grouped)
    scored = score_corpus(records)
    results = {name: scored[name] for name in names if name in scored}
    if not results:
        parser.error(f"no records of {opts.cases} in {workdir} (--reuse scores the records a run wrote there)")
    head = " ".join(f"{SHORT[c]:>16}" for c in SHORT)
    print(f"{'case':<18} {head} {'reads@line':>14} {'compiles@line':>14} {'misplaced':>9} {'expl':>5} {'advice':>6}")
    print(f"{'':<18} " + " ".join(f"{'x/truth (pts)':>16}" for _ in SHORT))
    for name, r in results.items():
        s = r.score
        causes = " ".join(f"{100 * s.report_share[c]:>4.0f}/{100 * s.truth_share[c]:>3.0f} ({s.cause_points[c]:+4.0f})"
                          for c in SHORT)
        print(f"{name:<18} {causes} {100 * s.reads_at_line:>4.0f}% {s.read_counts[0]:>3}/{s.read_counts[1]:<3}"
              f" {100 * s.compiles_at_line:>4.0f}% {s.compile_counts[0]:>3}/{s.compile_counts[1]:<3}"
              f" {len(s.misplaced):>9} {'yes' if r.explanation_names_change() else 'NO':>5}"
              f" {'yes' if r.advice_fits() else 'NO':>6}")
    for name, r in results.items():
        if r.truth.uncertainty_points:
            saving = 100 * r.truth.idle_share["transfer_from_device"]
            print(f"  {name}: the truth's read share is an A/B measurement, {saving:.0f}% +/-{r.truth.uncertainty_points:.0f}"
                  f" points (95%), {r.score.host_slowdown_points:.0f} of them the host's other work slower with the reads")
    for name, r in results.items():
        for line in r.score.misplaced:
            print(f"  {name}: misplaced {line}")
        for what, (counted, truth) in (("reads", r.score.read_counts), ("compiles", r.score.compile_counts)):
            if counted != truth:  # the suite asserts them equal: a line at 100% can hide a count off
                print(f"  {name}: xlaprof counted {counted} {what}, the truth {truth}")
    print(f"records in {workdir}")
    print_pods(opts.pods, os.path.join(workdir, "pods"))


def print_pods(runs: int, logdir: str) -> None:
    if runs <= 0:
        return
    print(f"\n{'pod':<6} {'run':>3} {'stragglers':>10} {'excess':>14} {'main':>14} {'blocked on':>10} {'right':>5}")
    for busy in (False, True):
        right = 0
        for run in range(runs):
            pod = capture_sleeping_pod(logdir, busy=busy)
            score = score_pod(analysis_json(analyze(Session.load(pod.session))), pod.sleeper)
            is_right = score.right(pod.sleeper)
            right += is_right
            print(f"{'busy' if busy else 'quiet':<6} {run:>3} {_who(score.stragglers, pod.sleeper):>10}"
                  f" {score.excess_cause!s:>14} {score.main_cause!s:>14}"
                  f" {_who(score.blocked_workers or [], pod.sleeper):>10} {'yes' if is_right else 'NO':>5}")
        print(f"{'busy' if busy else 'quiet'}: {right}/{runs} right")


def _who(labels: list[str], sleeper: str) -> str:
    return ",".join("sleeper" if label == sleeper else "other" for label in labels) or "-"


if __name__ == "__main__":
    main()
