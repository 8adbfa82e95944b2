"""Two synthetic sessions of one job compared: a read removed (the truth known), the same session
twice, and pods whose workers pair by label, then in label order."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.synthetic import training_capture, write_before_after, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.compare.finding_match import FindingStatus
from xlaprof.analysis.compare.session_diff import Change, diff_sessions
from xlaprof.analysis.pipeline.summary import step_times
from xlaprof.report import analysis_json, diff_json, render_diff_text
from xlaprof.session import Session


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    before, after = write_before_after(str(tmp_path_factory.mktemp("diff")))
    return analyze(Session.load(before)), analyze(Session.load(after))


@pytest.fixture(scope="module")
def diff(analyses):
    return diff_sessions(*analyses)


def test_removing_the_read_shortens_the_step_with_an_interval_below_zero(diff, analyses):
    before, after = (step_times(a.workers) for a in analyses)
    step = diff.step_time
    assert step.median_us == Change(float(np.median(before)), float(np.median(after)))
    assert step.median_us.relative < -0.05
    low, high = step.median_ci
    assert low <= step.median_us.relative <= high < 0 and step.significant


def test_the_read_is_resolved_with_the_time_it_cost(diff, analyses):
    read = next(f for f in analyses[0].findings if f.kind.value == "transfer_from_device")
    (resolved,) = [c for c in diff.findings_with(FindingStatus.RESOLVED) if c.finding.kind.value == "transfer_from_device"]
    assert resolved.before is read and resolved.after is None
    assert (resolved.finding.span, resolved.finding.source) == ("log_loss", "train.py:57")
    assert resolved.lost_delta_us == -read.lost_us
    cause = diff.idle_by_cause_us["transfer_from_device"]
    assert cause.before == pytest.approx(analyses[0].idle_by_cause["transfer_from_device"]) and cause.after == 0
    assert diff.reads == Change(60, 0)


def test_the_verdict_leads_with_step_time_and_names_the_read_that_is_gone(diff):
    data = diff_json(diff)
    step = data["step_time"]
    lo, hi = (f"{100 * x:+.1f}%" for x in step["median_ci"])
    assert data["verdict"].startswith(f"step time {100 * step['median_us']['relative']:+.1f}% (95% CI {lo}..{hi}); "
                                      f"transfer_from_device idle -")
    assert data["verdict"].endswith(": the read at log_loss (train.py:57) is gone")
    text = render_diff_text(diff)
    assert text.splitlines()[6] == data["verdict"]
    assert "resolved  [transfer_from_device] log_loss at train.py:57: " in text


def test_the_json_is_strict_json_with_null_for_a_change_from_zero(diff):
    data = json.loads(json.dumps(diff_json(diff), allow_nan=False))
    assert data["idle_by_cause_us"]["transfer_from_device"]["after"] == 0
    assert data["transfers_from_device"]["count"] == {"before": 60, "after": 0, "delta": -60, "relative": -1.0}
    new_from_zero = [f for f in data["findings"] if f["status"] == "new"]
    assert all(f["lost_us"]["relative"] is None and f["before"] is None for f in new_from_zero)
    resolved = next(f for f in data["findings"] if f["status"] == "resolved")
    assert resolved["after"] is None and resolved["before"]["kind"] == resolved["kind"]
    # one worker on each side (on another port) is the session itself: no per-worker rows
    assert data["workers"] == [] and data["unpaired_workers"] == {"before": [], "after": []}


def test_the_same_session_twice_changes_nothing(analyses):
    diff = diff_sessions(analyses[0], analyses[0])
    assert diff.step_time.median_ci[0] <= 0 <= diff.step_time.median_ci[1] and not diff.step_time.significant
    assert {c.status for c in diff.findings} == {FindingStatus.UNCHANGED}
    assert all(c.delta == 0 for c in diff.idle_by_cause_us.values())
    assert diff_json(diff)["verdict"].startswith("step time unchanged within noise: +0.0% (95% CI ")
    assert diff_json(diff)["verdict"].endswith("; device idle time unchanged")


def test_the_analyze_json_contract_is_untouched_by_a_diff(analyses):
    before = json.dumps(analysis_json(analyses[0]), sort_keys=True)
    diff_sessions(*analyses)
    assert json.dumps(analysis_json(analyses[0]), sort_keys=True) == before


def test_pod_workers_pair_by_label_then_in_order_and_a_step_lasts_as_long_as_its_slowest_worker(tmp_path):
    fast, slow = training_capture(steps=12, devices=1, read_every=0), training_capture(steps=12, devices=1)
    before = analyze(Session.load(write_session(str(tmp_path), "b", {"host-a_9012": fast, "host-b_9012": slow,
                                                                        "host-z_9012": fast})))
    after = analyze(Session.load(write_session(str(tmp_path), "a", {"host-b_9012": fast, "host-c_9012": slow})))
    diff = diff_sessions(before, after)
    assert [(w.before, w.after) for w in diff.workers] == [("host-b:9012", "host-b:9012"),
                                                           ("host-a:9012", "host-c:9012")]
    assert diff.unpaired == {"before": ["host-z:9012"], "after": []}
    walls = {w.worker.label: w.steps.wall_us for w in before.workers}
    np.testing.assert_allclose(step_times(before.workers), np.maximum(walls["host-a:9012"], walls["host-b:9012"]))
    assert diff.workers[0].step_time.median_us.relative < 0  # host-b lost its read
    text = render_diff_text(diff)
    assert "\nWorkers\n" in text and "  host-a:9012 -> host-c:9012: median step" in text
    assert "  only before: host-z:9012\n" in text


def test_idle_is_compared_per_step_and_per_second_beside_the_window_totals(tmp_path):
    """Windows of 10 and 60 steps: per step and per second are the totals over the steps and the
    seconds; the text report shows the three tables, per step first."""
    before = analyze(Session.load(write_session(str(tmp_path), "b", {"localhost_9012": training_capture(
        steps=10, devices=2, seed=1)})))
    after = analyze(Session.load(write_session(str(tmp_path), "a", {"localhost_9012": training_capture(
        steps=60, devices=2, read_every=0, seed=2)})))
    data = diff_json(diff_sessions(before, after))
    per_step, per_second = data["per_step"], data["per_second"]
    assert (per_step["steps"]["before"], per_step["steps"]["after"]) == (10, 60)
    for side, analysis, steps in (("before", before, 10), ("after", after, 60)):
        for cause, us in analysis.idle_by_cause.items():
            assert per_step["idle_by_cause_us"][cause][side] == pytest.approx(us / steps, abs=1e-3)
            assert per_second["idle_by_cause_us"][cause][side] == pytest.approx(us / analysis.window_us * 1e6, abs=1e-3)
        assert per_step["device_idle_us"][side] == pytest.approx(analysis.idle_us / steps, abs=1e-2)
    text = render_diff_text(diff_sessions(before, after))
    tables = [text.index(t) for t in ("Device time per step (10 -> 60 steps)", "Device time per second of window",
                                      "Device time, window totals")]
    assert tables == sorted(tables)
    assert diff_json(diff_sessions(before, before))["per_step"]["steps"]["delta"] == 0
