"""Budgets of the regression gate: the grammar (and a clear error for every malformed budget),
and their check against a diff whose figures are known."""
from __future__ import annotations

import dataclasses

import pytest

from tests.support.synthetic import write_before_after
from xlaprof.analysis import analyze
from xlaprof.analysis.compare.budgets import BudgetError, BudgetMode, check_budgets, parse_budget
from xlaprof.analysis.compare.session_diff import diff_sessions
from xlaprof.errors import XlaprofError
from xlaprof.session import Session
from xlaprof.units import format_duration, format_duration_change


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    before, after = write_before_after(str(tmp_path_factory.mktemp("budgets")))
    return analyze(Session.load(before)), analyze(Session.load(after))


@pytest.mark.parametrize("text, metric, op, mode, value", [
    ("step_time>+5%", "step_time", ">", BudgetMode.RELATIVE, 0.05),
    ("idle.compile>+100ms", "idle.compile", ">", BudgetMode.DELTA, 100_000.0),
    (" step_time.p90 >= -2.5% ", "step_time.p90", ">=", BudgetMode.RELATIVE, -0.025),
    ("step_time>120ms", "step_time", ">", BudgetMode.LIMIT, 120_000.0),
    ("idle<=1.5s", "idle", "<=", BudgetMode.LIMIT, 1_500_000.0),
    ("read_time>+250us", "read_time", ">", BudgetMode.DELTA, 250.0),
    ("compiles>0", "compiles", ">", BudgetMode.LIMIT, 0.0),
    ("findings.new>=1", "findings.new", ">=", BudgetMode.LIMIT, 1.0),
    ("reads<-.5", "reads", "<", BudgetMode.DELTA, -0.5),
])
def test_budgets_parse(text, metric, op, mode, value):
    budget = parse_budget(text)
    assert (budget.metric.name, budget.op, budget.mode, budget.value) == (metric, op, mode, pytest.approx(value))
    assert budget.text == text


@pytest.mark.parametrize("text, says", [
    ("step_time", "expected METRIC OP VALUE, e.g. step_time>+5% or idle.compile>+100ms"),
    ("step_time>>5%", "expected METRIC OP VALUE"),
    ("step_time=+5%", "expected METRIC OP VALUE"),
    ("step_time>+5 percent", "expected METRIC OP VALUE"),
    ("steptime>+5%", "unknown metric 'steptime'; metrics: step_time, step_time.p90, idle, idle."),
    ("idle.sleeping>+1ms", "unknown metric 'idle.sleeping'"),
    ("step_time>5%", "a percentage is a change from BEFORE: write it with a sign, e.g. step_time>+5%"),
    ("idle.compile>+100", "idle.compile is a time: give a unit (us, ms or s), e.g. idle.compile>+100ms"),
    ("compiles>+2ms", "compiles is a count: write a plain number, e.g. compiles>+2"),
    ("", "expected METRIC OP VALUE"),
])
def test_a_malformed_budget_is_one_clear_error(text, says):
    with pytest.raises(BudgetError) as error:
        parse_budget(text)
    assert isinstance(error.value, XlaprofError)  # the CLI's exit code 2, one line
    assert says in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(f"budget {text!r}: ")


def test_budgets_are_checked_against_the_diff(analyses):
    diff = diff_sessions(*analyses)
    texts = ["step_time>+5%", "step_time<-5%", "idle.transfer_from_device<-10ms", "reads>0", "reads<=-60",
             "read_time>+0us", "idle.compile>+100ms", "findings.new>0"]
    results = check_budgets([parse_budget(t) for t in texts], diff)
    assert {r.budget.text: r.exceeded for r in results} == {
        "step_time>+5%": False, "step_time<-5%": True, "idle.transfer_from_device<-10ms": True, "reads>0": False,
        "reads<=-60": True, "read_time>+0us": False, "idle.compile>+100ms": False, "findings.new>0": False}
    step = diff.step_time
    low, high = step.median_ci
    assert results[1].message == (
        f"step_time<-5%: median step time {format_duration(step.median_us.before)} -> "
        f"{format_duration(step.median_us.after)} ({format_duration_change(step.median_us.delta)}, {100 * step.median_us.relative:+.1f}%, 95% CI {100 * low:+.1f}%..{100 * high:+.1f}%)")
    assert results[3].message == "reads>0: blocking reads 60 -> 0 (-60, -100.0%)"
    # the other way round, the read is a regression
    backwards = diff_sessions(analyses[1], analyses[0])
    assert [r.exceeded for r in check_budgets([parse_budget("reads>0"), parse_budget("step_time>+5%")], backwards)] \
        == [True, True]


def test_a_step_time_change_within_noise_exceeds_no_budget(analyses):
    same = diff_sessions(analyses[0], analyses[0])
    assert same.step_time.median_us.relative == 0
    (result,) = check_budgets([parse_budget("step_time>=+0%")], same)  # 0 >= 0, but the interval includes 0
    assert not result.exceeded
    (limit,) = check_budgets([parse_budget("step_time>1us")], same)  # a bound on AFTER has no noise rule
    assert limit.exceeded


def test_a_step_budget_without_steps_cannot_be_checked(analyses):
    diff = dataclasses.replace(diff_sessions(*analyses), step_time=None)
    with pytest.raises(BudgetError, match=r"^budget 'step_time.p90>\+1%': p90 step time needs steps in both sessions"):
        check_budgets([parse_budget("step_time.p90>+1%")], diff)
    (idle,) = check_budgets([parse_budget("idle>+1s")], diff)
    assert not idle.exceeded

