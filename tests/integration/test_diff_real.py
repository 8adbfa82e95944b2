"""``xlaprof diff`` on real captures of one CPU-device worker with and without an ``.item()`` every
step: the read is resolved with its time and the step time is shorter beyond noise; the same
capture twice (two copies of it) changes nothing."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.support.workers import demo_span_line, run_cli
from xlaprof.analysis import analyze
from xlaprof.analysis.finding_match import FindingStatus
from xlaprof.analysis.session_diff import diff_sessions
from xlaprof.session import Session

pytestmark = pytest.mark.torch_xla


@pytest.fixture(scope="module")
def analyses(workload_sessions):
    return {variant: analyze(Session.load(workload_sessions[variant])) for variant in ("fixed_shapes", "no_reads")}


def test_removing_the_item_resolves_the_read_with_its_time_and_shortens_the_step(analyses):
    before = analyses["fixed_shapes"]
    diff = diff_sessions(before, analyses["no_reads"])
    read = next(f for f in before.findings if f.kind.value == "transfer_from_device" and f.span == "log_loss")
    resolved = [c for c in diff.findings_with(FindingStatus.RESOLVED) if c.before is read]
    assert len(resolved) == 1 and resolved[0].lost_before_us == read.lost_us > 0
    assert diff.idle_by_cause_us["transfer_from_device"].after < 0.01 * diff.idle_by_cause_us["transfer_from_device"].before
    low, high = diff.step_time.median_ci
    assert high < 0 and diff.step_time.significant, (low, high)
    assert diff.reads.before >= 5 and diff.reads.after == 0


def test_the_cli_names_the_resolved_read_and_its_line(workload_sessions, analyses):
    result = run_cli("diff", workload_sessions["fixed_shapes"], workload_sessions["no_reads"], "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (row,) = [f for f in data["findings"] if f["status"] == "resolved" and f["kind"] == "transfer_from_device"]
    assert row["span"] == "log_loss" and row["source"].endswith(f"demo_worker.py:{demo_span_line('log_loss')}")
    assert row["lost_us"]["before"] > 0 and row["lost_us"]["after"] == 0
    assert data["step_time"]["median_ci"][1] < 0
    text = run_cli("diff", workload_sessions["fixed_shapes"], workload_sessions["no_reads"]).stdout
    assert f"resolved  [transfer_from_device] log_loss at {row['source']}: " in text


def test_the_same_capture_twice_gives_an_interval_around_zero_and_no_changed_finding(workload_sessions, tmp_path):
    original = workload_sessions["no_reads"]
    copy = shutil.copytree(original, os.path.join(tmp_path, "plugins", "profile", "copy"))
    result = run_cli("diff", original, copy, "--json", "--fail-if", "step_time>=+0%", "--fail-if", "findings.new>0")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    low, high = data["step_time"]["median_ci"]
    assert low <= 0 <= high and not data["step_time"]["significant"]
    assert {f["status"] for f in data["findings"]} == {"unchanged"}
    assert all(c["delta"] == 0 for c in data["idle_by_cause_us"].values())
    assert data["verdict"].startswith("step time unchanged within noise")

