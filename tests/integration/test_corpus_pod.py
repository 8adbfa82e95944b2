"""The corpus' pod (``tests/support/truth/pod_run.py``): two worker processes on this machine with no
spans (only ``xlaprof.start_server``), one of them sleeping 30 ms a step in its loader, captured at
once by the real CLI.

The truth is the workload's own: the sleeping worker is the straggler and a blocked host is why; the
other worker is not; the blocked finding is on the sleeping worker alone.
"""
from __future__ import annotations

import pytest

from tests.support.truth.pod_run import LOADER_LINE, capture_sleeping_pod, score_pod
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.session import Session

pytestmark = [pytest.mark.torch_xla, pytest.mark.exclusive]


@pytest.fixture(scope="module")
def pod(tmp_path_factory) -> tuple[dict, str]:
    captured = capture_sleeping_pod(str(tmp_path_factory.mktemp("pod")))
    return analysis_json(analyze(Session.load(captured.session))), captured.sleeper


def test_steps_are_found_without_spans_on_every_worker(pod):
    report, _ = pod
    assert len(report["per_worker"]) == 2 and all(p["steps"] >= 10 for p in report["per_worker"].values())
    assert len(report["step_alignment"]) >= 10


def test_the_sleeping_worker_is_the_straggler_and_blocked_is_why(pod):
    report, sleeper = pod
    score = score_pod(report, sleeper)
    # Why it is slower, not what dominates its steps: on a loaded host every worker's Python waits for a
    # core, and host_tracing can dominate the sleeper's steps too (5 of 5 runs beside a busy process).
    assert score.stragglers == [sleeper] and score.excess_cause == "host_blocked", score
    # Steps n of two unsynchronised workers are compared: on a loaded host the other worker's step n
    # can stall past the sleep (a real slower step, not a misreading), but only now and then.
    slowest, steps = report["slowest_in_steps"], len(report["step_alignment"])
    assert slowest[sleeper] >= 0.9 * steps and sum(slowest.values()) - slowest[sleeper] <= 0.1 * steps


def test_the_blocked_finding_is_at_the_sleep_on_the_sleeping_worker(pod):
    report, sleeper = pod
    assert score_pod(report, sleeper).blocked_workers == [sleeper]
    (blocked,) = [f for f in report["findings"] if f["kind"] == "host_blocked" and f["source"] == LOADER_LINE]
    assert sleeper in blocked["detail"]
