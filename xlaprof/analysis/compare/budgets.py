"""Regression budgets, the gate of ``xlaprof diff --fail-if``: parsed from text, checked against a diff.

Grammar of a budget: ``METRIC OP VALUE``, e.g. ``step_time>+5%``, ``idle.compile>+100ms``, ``compiles>0``.
- METRIC: ``step_time`` (median step time), ``step_time.p90``, ``idle`` (device idle time),
  ``idle.<cause>`` (one cause of ``attribution.CAUSES``), ``busy``, ``compile_time``, ``read_time``
  (host time blocked in reads), ``compiles``, ``reads``, ``findings.new`` (counts).
- OP: ``>``, ``>=``, ``<``, ``<=``: the budget is exceeded when the comparison holds.
- VALUE: with a sign, a change from BEFORE to AFTER: ``+5%`` relative to BEFORE, ``+100ms`` in
  absolute terms; without a sign, a bound on AFTER itself (``120ms``, ``0``). A time takes a unit
  (``us``, ``ms``, ``s``); a count is a plain number; a percentage always has a sign.
A step-time change that its 95% confidence interval cannot tell from zero exceeds no budget:
the gate does not fail a job on noise.

Contract: ``parse_budget(text)`` returns a ``Budget`` or raises ``BudgetError`` (an
``XlaprofError``: one line, exit code 2 from the CLI) naming what is wrong and how to write it.
``check_budgets(budgets, diff)`` returns one ``BudgetResult`` per budget, each with a one-line
``message``; it raises ``BudgetError`` when a budget cannot be measured (a step-time budget and
a session without steps).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from xlaprof.analysis.compare.finding_match import FindingStatus
from xlaprof.analysis.compare.session_diff import Change, SessionDiff, excludes_zero
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.errors import XlaprofError
from xlaprof.units import format_duration, format_duration_change, format_interval, format_percent_change

EXAMPLES = "e.g. step_time>+5% or idle.compile>+100ms"
TIME_UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6}
_BUDGET = re.compile(r"^\s*(?P<metric>[A-Za-z_][\w.]*)\s*(?P<op>>=|<=|>|<)\s*(?P<sign>[+-])?"
                     r"(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>%|us|ms|s)?\s*$")
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}


class BudgetError(XlaprofError):
    """A budget that is malformed, or that the two sessions cannot answer."""


class MetricKind(Enum):
    TIME = "time"  # microseconds
    COUNT = "count"


class BudgetMode(Enum):
    RELATIVE = "relative"  # a signed percentage: the change relative to BEFORE
    DELTA = "delta"  # a signed value: the change AFTER - BEFORE
    LIMIT = "limit"  # an unsigned value: AFTER itself


@dataclass(frozen=True)
class Metric:
    name: str
    words: str  # how the message names it
    kind: MetricKind
    change: Callable[[SessionDiff], Change | None]  # None: the sessions cannot say
    ci: Callable[[SessionDiff], tuple[float, float] | None] | None = None  # of the relative change, where known


def _step(diff: SessionDiff, attr: str):
    return getattr(diff.step_time, attr) if diff.step_time is not None else None


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("step_time", "median step time", MetricKind.TIME, lambda d: _step(d, "median_us"),
           lambda d: _step(d, "median_ci")),
    Metric("step_time.p90", "p90 step time", MetricKind.TIME, lambda d: _step(d, "p90_us"),
           lambda d: _step(d, "p90_ci")),
    Metric("idle", "device idle", MetricKind.TIME, lambda d: d.idle_us),
    *[Metric(f"idle.{c.value}", f"{c.value} idle", MetricKind.TIME,
             lambda d, cause=c.value: d.idle_by_cause_us[cause]) for c in CAUSES],
    Metric("busy", "device busy", MetricKind.TIME, lambda d: d.busy_us),
    Metric("compile_time", "compile time", MetricKind.TIME, lambda d: d.compile_us),
    Metric("read_time", "host time blocked in reads", MetricKind.TIME, lambda d: d.read_blocked_us),
    Metric("compiles", "compiles", MetricKind.COUNT, lambda d: d.compiles),
    Metric("reads", "blocking reads", MetricKind.COUNT, lambda d: d.reads),
    Metric("findings.new", "new findings", MetricKind.COUNT,
           lambda d: Change(0, len(d.findings_with(FindingStatus.NEW)))),
]}


@dataclass(frozen=True)
class Budget:
    text: str  # as written
    metric: Metric
    op: str
    mode: BudgetMode
    value: float  # a fraction (RELATIVE), microseconds (TIME) or a count


@dataclass(frozen=True)
class BudgetResult:
    budget: Budget
    exceeded: bool
    change: Change
    message: str  # one line: the budget, the figures and the change


def parse_budget(text: str) -> Budget:
    match = _BUDGET.match(text)
    if not match:
        raise BudgetError(f"budget {text!r}: expected METRIC OP VALUE, {EXAMPLES}")
    name, op, sign, number, unit = match.group("metric", "op", "sign", "number", "unit")
    metric = METRICS.get(name)
    if metric is None:
        raise BudgetError(f"budget {text!r}: unknown metric {name!r}; metrics: {', '.join(METRICS)}")
    value = float(number) * (-1 if sign == "-" else 1)
    if unit == "%":
        if sign is None:
            raise BudgetError(f"budget {text!r}: a percentage is a change from BEFORE: write it with a sign, "
                              f"e.g. {name}{op}+{number}%")
        return Budget(text, metric, op, BudgetMode.RELATIVE, value / 100)
    if metric.kind is MetricKind.TIME:
        if unit is None:
            raise BudgetError(f"budget {text!r}: {name} is a time: give a unit (us, ms or s), "
                              f"e.g. {name}{op}{sign or ''}{number}ms")
        value *= TIME_UNITS_US[unit]
    elif unit is not None:
        raise BudgetError(f"budget {text!r}: {name} is a count: write a plain number, e.g. {name}{op}{sign or ''}{number}")
    return Budget(text, metric, op, BudgetMode.LIMIT if sign is None else BudgetMode.DELTA, value)


def check_budgets(budgets: list[Budget], diff: SessionDiff) -> list[BudgetResult]:
    return [_check(b, diff) for b in budgets]


def _check(budget: Budget, diff: SessionDiff) -> BudgetResult:
    metric = budget.metric
    change = metric.change(diff)
    if change is None:
        raise BudgetError(f"budget {budget.text!r}: {metric.words} needs steps in both sessions; wrap the "
                          f"training loop's body in xlaprof.step(n)")
    measured = {BudgetMode.RELATIVE: change.relative, BudgetMode.DELTA: change.delta,
                BudgetMode.LIMIT: change.after}[budget.mode]
    exceeded = _COMPARE[budget.op](measured, budget.value)
    ci = metric.ci(diff) if metric.ci else None
    if budget.mode is not BudgetMode.LIMIT and ci is not None and not excludes_zero(ci):
        exceeded = False  # a change the interval cannot tell from noise
    return BudgetResult(budget, exceeded, change, _message(budget, change, ci))


def _message(budget: Budget, change: Change, ci: tuple[float, float] | None) -> str:
    metric = budget.metric
    if metric.kind is MetricKind.TIME:
        figures = f"{format_duration(change.before)} -> {format_duration(change.after)}"
        moved = [format_duration_change(change.delta)]
    else:
        figures = f"{change.before:g} -> {change.after:g}"
        moved = [f"{change.delta:+g}"]
    if change.before:
        moved.append(format_percent_change(change.relative))
    if ci is not None:
        moved.append(format_interval(ci))
    elif metric.ci:
        moved.append("too few steps for an interval")
    return f"{budget.text}: {metric.words} {figures} ({', '.join(moved)})"
