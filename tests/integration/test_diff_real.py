"""``xlaprof diff`` on real captures of one CPU-device training loop with and without an ``.item()``
in every step (``tests/support/read_workload.py``): the read is resolved with its time and the step
time is shorter beyond noise; the same capture twice (two copies of it) changes nothing.

The two variants run side by side, so both see the same load on the machine: run one after the
other on a busy machine, the load that changes between the two moves step times as much as a
read does."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import tests.support.read_workload as read_workload
from tests.support.workers import REPO, run_cli, span_line
from xlaprof.analysis import analyze
from xlaprof.analysis.finding_match import FindingStatus
from xlaprof.analysis.session_diff import diff_sessions
from xlaprof.session import Session

pytestmark = pytest.mark.torch_xla
WORKLOAD = "tests.support.read_workload"


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> dict[str, str]:
    """{variant: session dir} of the two variants, run at the same time."""
    logdir = str(tmp_path_factory.mktemp("diff_real"))
    env = dict(os.environ, PJRT_DEVICE="CPU")
    runs = {variant: subprocess.Popen([sys.executable, "-m", WORKLOAD, logdir, variant, *flags], cwd=REPO, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for variant, flags in (("reads", ["--read"]), ("no_reads", []))}
    paths = {}
    for variant, process in runs.items():
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-2000:]
        paths[variant] = out.strip().splitlines()[-1]
    return paths


@pytest.fixture(scope="module")
def analyses(sessions):
    return {variant: analyze(Session.load(path)) for variant, path in sessions.items()}


def test_removing_the_item_resolves_the_read_with_its_time_and_shortens_the_step(analyses):
    before = analyses["reads"]
    diff = diff_sessions(before, analyses["no_reads"])
    read = next(f for f in before.findings if f.kind.value == "transfer_from_device" and f.span == "log_loss")
    resolved = [c for c in diff.findings_with(FindingStatus.RESOLVED) if c.before is read]
    assert len(resolved) == 1 and resolved[0].lost_before_us == read.lost_us > 0
    assert diff.idle_by_cause_us["transfer_from_device"].after < 0.01 * diff.idle_by_cause_us["transfer_from_device"].before
    low, high = diff.step_time.median_ci
    assert high < 0 and diff.step_time.significant, (low, high)
    assert diff.reads.before >= 5 and diff.reads.after == 0


def test_the_cli_names_the_resolved_read_and_its_line(sessions):
    result = run_cli("diff", sessions["reads"], sessions["no_reads"], "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (row,) = [f for f in data["findings"] if f["status"] == "resolved" and f["kind"] == "transfer_from_device"]
    assert row["span"] == "log_loss" and row["source"].endswith(f"read_workload.py:{span_line(read_workload, 'log_loss')}")
    assert row["lost_us"]["before"] > 0 and row["lost_us"]["after"] == 0
    assert data["step_time"]["median_ci"][1] < 0
    text = run_cli("diff", sessions["reads"], sessions["no_reads"]).stdout
    assert f"resolved  [transfer_from_device] log_loss at {row['source']}: " in text


def test_the_same_capture_twice_gives_an_interval_around_zero_and_no_changed_finding(sessions, tmp_path):
    original = sessions["no_reads"]
    copy = shutil.copytree(original, os.path.join(tmp_path, "plugins", "profile", "copy"))
    result = run_cli("diff", original, copy, "--json", "--fail-if", "step_time>=+0%", "--fail-if", "findings.new>0")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    low, high = data["step_time"]["median_ci"]
    assert low <= 0 <= high and not data["step_time"]["significant"]
    assert {f["status"] for f in data["findings"]} == {"unchanged"}
    assert all(c["delta"] == 0 for c in data["idle_by_cause_us"].values())
    assert data["verdict"].startswith("step time unchanged within noise")

