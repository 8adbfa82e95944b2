"""``xlaprof diff`` in a subprocess: the report, the JSON, and the gate's exit codes (0 within
budget, 1 a budget exceeded with one line each, 2 a malformed budget or bad input)."""
from __future__ import annotations

import glob
import json
import os

import pytest

from tests.support.synthetic import write_before_after
from tests.support.workers import run_cli


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[str, str]:
    return write_before_after(str(tmp_path_factory.mktemp("diff_cli") / "logs"))


def test_the_report_leads_with_the_verdict(runs):
    result = run_cli("diff", *runs)
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "xlaprof diff" and lines[1].endswith(runs[0]) and lines[3].endswith(runs[1])
    assert lines[6].startswith("step time -") and lines[6].endswith(": the read at log_loss (train.py:57) is gone")


def test_budgets_within_limits_exit_0(runs):
    result = run_cli("diff", *runs, "--fail-if", "step_time>+5%", "--fail-if", "idle.compile>+100ms",
                     "--fail-if", "reads>0")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "\nBudgets\n" in result.stdout and "  ok       reads>0: blocking reads 60 -> 0 (-60, -100.0%)" in result.stdout


def test_exceeded_budgets_exit_1_with_one_line_each(runs):
    before, after = runs
    result = run_cli("diff", after, before, "--fail-if", "step_time>+5%", "--fail-if", "idle.compile>+100ms",
                     "--fail-if", "reads>0")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("xlaprof: budget exceeded: step_time>+5%: median step time ") and "95% CI +" in lines[0]
    assert lines[1] == "xlaprof: budget exceeded: reads>0: blocking reads 0 -> 60 (+60)"
    assert "  EXCEEDED reads>0" in result.stdout


def test_json_carries_the_budgets_and_the_verdict(runs):
    result = run_cli("diff", *runs, "--json", "--fail-if", "step_time<-5%")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["before"]["session"] == runs[0] and data["after"]["session"] == runs[1]
    assert data["verdict"].startswith("step time -")
    (budget,) = data["budgets"]
    assert budget["budget"] == "step_time<-5%" and budget["exceeded"] and budget["message"] in result.stderr
    assert data["step_time"]["significant"] and data["step_time"]["median_ci"][1] < 0
    assert data["step_time"]["method"].startswith("percentile bootstrap over steps")


@pytest.mark.parametrize("budget, says", [
    ("step_time>5%", "a percentage is a change from BEFORE"),
    ("idle.compile>+100", "give a unit (us, ms or s)"),
    ("nonsense", "expected METRIC OP VALUE"),
])
def test_a_malformed_budget_exits_2_with_one_line_before_reading_anything(tmp_path, budget, says):
    result = run_cli("diff", str(tmp_path / "missing"), str(tmp_path / "missing"), "--fail-if", budget)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"xlaprof: error: budget {budget!r}: ") and says in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_bad_input_exits_2(runs, tmp_path):
    missing = run_cli("diff", runs[0], str(tmp_path / "nope"))
    assert missing.returncode == 2 and missing.stderr == f"xlaprof: error: {tmp_path / 'nope'}: no such file or directory\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = run_cli("diff", str(empty), runs[1])
    assert nothing.returncode == 2 and "no profile sessions here" in nothing.stderr and "Traceback" not in nothing.stderr


def test_logdirs_and_capture_files_are_accepted(runs):
    logdir = os.path.dirname(os.path.dirname(os.path.dirname(runs[0])))
    (after_file,) = glob.glob(os.path.join(runs[1], "*.xplane.pb"))
    result = run_cli("diff", logdir, after_file, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    newest = max(runs, key=lambda r: os.path.getmtime(glob.glob(os.path.join(r, "*.xplane.pb"))[0]))
    assert data["before"]["session"] == newest and data["after"]["session"] == after_file


def test_help_explains_budgets_with_examples():
    result = run_cli("diff", "--help")
    assert result.returncode == 0
    assert "xlaprof diff base-logs new-logs --fail-if \"step_time>+5%\" --fail-if \"idle.compile>+100ms\"" in result.stdout
    assert "Exit codes: 0 ok, 1 a budget exceeded" in result.stdout
