"""Cross-worker comparison on synthetic pods whose truth is known: one worker recompiles every
step (the straggler, slow because of compile), the other does not."""
from __future__ import annotations

import pytest

from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.pipeline.worker_comparison import cause_above_median
from xlaprof.report import analysis_json
from xlaprof.session import Session


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    run = write_session(str(tmp_path_factory.mktemp("pod")), "pod", {
        "host-a_9012": training_capture(steps=20, devices=2, seed=1),
        "host-b_9012": training_capture(steps=20, devices=2, recompile_every=1, seed=2),
        "host-c_9012": training_capture(steps=20, devices=2, seed=3)})
    return analysis_json(analyze(Session.load(run)))


def test_the_recompiling_worker_is_the_only_straggler_and_compile_is_why(report):
    (straggler,) = report["stragglers"]
    assert straggler["worker"] == "host-b:9012" and straggler["main_cause"] == straggler["excess_cause"] == "compile"
    assert straggler["excess_cause_us_per_step"] > 0
    typical = sorted(p["median_step_us"] for p in report["per_worker"].values())[1]
    assert straggler["slower_by_us"] == pytest.approx(straggler["median_step_us"] - typical)


def test_steps_are_aligned_by_number_across_workers(report):
    rows = report["step_alignment"]
    assert [r["step"] for r in rows] == list(range(20))
    for row in rows:
        assert set(row["wall_us"]) == {"host-a:9012", "host-b:9012", "host-c:9012"}
        assert all(v > 0 for v in row["wall_us"].values())
    for worker in ("host-a:9012", "host-b:9012"):
        starts = [r["start_unix_ns"][worker] for r in rows]
        assert starts == sorted(starts)


def test_one_worker_has_no_stragglers_and_no_alignment(tmp_path):
    run = write_session(str(tmp_path), "solo", {"host-a_9012": training_capture(steps=5, devices=1)})
    report = analysis_json(analyze(Session.load(run)))
    assert report["stragglers"] == [] and report["step_alignment"] == []
    assert set(report["per_worker"]) == {"host-a:9012"}


def test_identical_workers_tie_no_straggler_and_no_slowest(tmp_path):
    """Two copies of one capture: every step ties, so no worker is the slowest in any step."""
    capture = training_capture(steps=20, devices=2, seed=1)
    run = write_session(str(tmp_path), "twins", {"host-a_9012": capture, "host-b_9012": capture})
    report = analysis_json(analyze(Session.load(run)))
    assert len(report["step_alignment"]) == 20
    assert report["stragglers"] == [] and report["slowest_in_steps"] == {}


def test_every_finding_says_which_workers_it_is_on(tmp_path):
    run = write_session(str(tmp_path), "pod", {"host-a_9012": training_capture(steps=10, devices=2, seed=1),
                                               "host-b_9012": training_capture(steps=10, devices=2, read_every=0,
                                                                               seed=2)})
    report = analysis_json(analyze(Session.load(run)))
    assert all(f["workers"] for f in report["findings"] if f["lost_us"] > 0)
    reads = [f for f in report["findings"] if f["kind"] == "transfer_from_device"]
    assert reads and all(f["workers"] == ["host-a:9012"] and "on host-a:9012" in f["detail"] for f in reads)
    tracing = [f for f in report["findings"] if f["kind"] == "host_tracing"]
    assert tracing and all("on all 2 workers" in f["detail"] for f in tracing)


def test_why_a_straggler_is_slower_is_the_cause_it_has_more_of_not_the_one_every_worker_has_most_of():
    """A loaded host (figures of a real pod beside a busy process): every worker's Python waits for a
    core, so host_tracing dominates each one's steps; the straggler's excess is its loader's sleep."""
    per_step = {"a:1": {"host_tracing": 16.4e3, "host_blocked": 0.0, "compile": 0.0},
                "b:1": {"host_tracing": 17.0e3, "host_blocked": 0.1e3, "compile": 0.0},
                "c:1": {"host_tracing": 38.2e3, "host_blocked": 24.5e3, "compile": 0.0}}
    assert cause_above_median(per_step, "c:1") == ("host_blocked", pytest.approx(24.4e3))
    assert max(per_step["c:1"], key=per_step["c:1"].get) == "host_tracing"
    assert cause_above_median(per_step, "b:1")[1] == 0  # the median worker has no excess
