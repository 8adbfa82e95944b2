"""``xlaprof diff`` on real captures of one CPU-device training loop with and without an ``.item()``
in every step (``tests/support/read_workload.py``): the read is resolved with its time and the step
time is shorter beyond noise; the same capture twice (two copies of it) changes nothing.

The two variants run in lockstep, step k of each started at the same moment, so both see the
same load on the machine step by step: run one after the other, or side by side unpaced, on a
busy machine whose cores the CPU device shares with everything else, the load that changes
between their windows moves step times more than the read does."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import tests.support.read_workload as read_workload
from tests.support.workers import REPO, run_cli, source_line
from xlaprof.analysis import analyze
from xlaprof.analysis.compare.finding_match import FindingStatus
from xlaprof.analysis.compare.session_diff import diff_sessions
from xlaprof.session import Session

pytestmark = pytest.mark.torch_xla


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> dict[str, str]:
    """{variant: session dir} of the two variants, run in lockstep."""
    folder = tmp_path_factory.mktemp("diff_real")
    env = dict(os.environ, PJRT_DEVICE="CPU")
    runs = {}
    for variant, flags in (("reads", ["--read"]), ("no_reads", [])):
        with open(folder / f"{variant}.log", "w") as log:
            runs[variant] = subprocess.Popen(
                [sys.executable, "-m", read_workload.__name__, str(folder), variant, "--paced", *flags], cwd=REPO,
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        for _ in range(read_workload.STEPS):
            for process in runs.values():
                process.stdin.write("step\n")
                process.stdin.flush()
            for variant, process in runs.items():
                assert process.stdout.readline() == "stepped\n", (folder / f"{variant}.log").read_text()[-2000:]
        paths = {variant: process.stdout.readline().split("session ", 1)[1].strip() for variant, process in runs.items()}
    finally:
        for process in runs.values():
            process.stdin.close()
            process.wait(timeout=120)
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
    # the read's time, and stack samples near it may charge slivers to the lines around it
    row = max((f for f in data["findings"] if f["status"] == "resolved" and f["kind"] == "transfer_from_device"),
              key=lambda f: f["lost_us"]["before"])
    # the read's own line, from the sampled stacks
    read_line = source_line(read_workload, "losses.append(loss.item())")
    assert row["span"] == "log_loss" and row["source"].endswith(f"read_workload.py:{read_line}")
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

