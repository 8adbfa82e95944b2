"""Before and after: what changed between two analysed sessions of the same job.

Contract: ``diff_sessions(before, after, config)`` compares two ``SessionAnalysis`` results and
returns a ``SessionDiff`` (times in microseconds of device time summed over devices, like the
JSON report; each figure a ``Change`` from before to after):
- ``step_time``: the median and p90 of per-step times (``summary.step_times``), each with the 95%
  confidence interval of its relative change (``bootstrap.quantile_change_cis``); ``None`` when
  either session has no steps; ``steps``: how many steps each session has;
- device time: window, busy, idle, idle share, and idle by cause;
- compiles (count and time) and blocking reads (count and host time blocked);
- ``findings``: matched across the two (``finding_match``): resolved, new, changed, unchanged;
- ``workers``: per pair of workers of a pod, its step time and idle by cause (empty for one
  worker on each side: the session's figures are that worker's). Workers pair by label
  (``host:port``); the rest pair in label order (a re-run on another port is the same worker),
  and what is left is listed in ``unpaired``.
It only reads the two analyses; nothing is written, plotted or serialized here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.compare.bootstrap import quantile_change_cis
from xlaprof.analysis.compare.finding_match import FindingChange, FindingStatus, MatchConfig, match_findings
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.analysis.pipeline.session_analysis import SessionAnalysis
from xlaprof.analysis.pipeline.summary import P90, idle_share, step_times
from xlaprof.analysis.pipeline.worker_summary import WorkerSummary


@dataclass(frozen=True)
class DiffConfig:
    resamples: int = 2000  # bootstrap rounds behind each step-time interval
    level: float = 0.95  # confidence level of the intervals
    seed: int = 0  # the bootstrap's seed: the same two sessions always give the same intervals
    findings: MatchConfig = field(default_factory=MatchConfig)  # when a matched finding has changed


@dataclass(frozen=True)
class Change:
    before: float
    after: float

    @property
    def delta(self) -> float:
        return self.after - self.before

    @property
    def relative(self) -> float:
        """The change as a share of ``before`` (0.1: +10%); infinite from 0 to anything more."""
        if self.before == 0:
            return 0.0 if self.after == 0 else math.copysign(math.inf, self.after)
        return self.delta / self.before


@dataclass(frozen=True)
class StepTimeChange:
    steps: Change  # how many steps each session has
    median_us: Change
    p90_us: Change
    median_ci: tuple[float, float] | None  # relative change of the median: (low, high); None: too few steps
    p90_ci: tuple[float, float] | None
    before_us: np.ndarray = field(repr=False)  # the per-step times compared
    after_us: np.ndarray = field(repr=False)

    @property
    def significant(self) -> bool:
        """Whether the median's interval excludes zero: a change noise would hardly make."""
        return excludes_zero(self.median_ci)


@dataclass(frozen=True)
class WorkerDiff:
    before: str  # the worker's label in each session
    after: str
    step_time: StepTimeChange | None
    idle_us: Change
    busy_us: Change
    idle_by_cause_us: dict[str, Change]


@dataclass
class SessionDiff:
    __repr__ = short_repr
    before: SessionAnalysis
    after: SessionAnalysis
    config: DiffConfig
    step_time: StepTimeChange | None  # None: a session without steps
    steps: Change  # steps of each session (either may have steps where step_time is None)
    window_us: Change
    busy_us: Change
    idle_us: Change
    idle_share: Change  # idle / (busy + idle), 0..1
    idle_by_cause_us: dict[str, Change]
    compiles: Change
    compile_us: Change
    reads: Change
    read_blocked_us: Change
    findings: list[FindingChange]
    workers: list[WorkerDiff]
    unpaired: dict[str, list[str]]  # "before"/"after" -> labels of workers without a partner

    def findings_with(self, status: FindingStatus) -> list[FindingChange]:
        return [c for c in self.findings if c.status is status]


def excludes_zero(ci: tuple[float, float] | None) -> bool:
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def diff_sessions(before: SessionAnalysis, after: SessionAnalysis, config: DiffConfig = DiffConfig()) -> SessionDiff:
    pairs, unpaired = _pair_workers(before.summaries, after.summaries)
    steps_before, steps_after = step_times(before.summaries), step_times(after.summaries)
    busy, idle = Change(before.busy_us, after.busy_us), Change(before.idle_us, after.idle_us)
    return SessionDiff(
        before, after, config,
        step_time=_step_time(steps_before, steps_after, config),
        steps=Change(steps_before.size, steps_after.size),
        window_us=Change(before.window_us, after.window_us),
        busy_us=busy,
        idle_us=idle,
        idle_share=Change(idle_share(busy.before, idle.before), idle_share(busy.after, idle.after)),
        idle_by_cause_us=_by_cause(before.idle_by_cause, after.idle_by_cause),
        compiles=Change(before.compiles.count, after.compiles.count),
        compile_us=Change(before.compiles.total_us, after.compiles.total_us),
        reads=Change(before.reads.count, after.reads.count),
        read_blocked_us=Change(before.reads.blocked_us, after.reads.blocked_us),
        findings=match_findings(before.findings, after.findings, config.findings),
        workers=[_worker_diff(b, a, config) for b, a in pairs] if len(pairs) > 1 or any(unpaired.values()) else [],
        unpaired=unpaired)


def _step_time(before: np.ndarray, after: np.ndarray, config: DiffConfig) -> StepTimeChange | None:
    if not before.size or not after.size:
        return None
    median_ci, p90_ci = quantile_change_cis(before, after, (0.5, P90), resamples=config.resamples,
                                            level=config.level, seed=config.seed)
    return StepTimeChange(Change(before.size, after.size),
                          Change(float(np.median(before)), float(np.median(after))),
                          Change(float(np.quantile(before, P90)), float(np.quantile(after, P90))),
                          median_ci, p90_ci, before, after)


def _by_cause(before: dict[str, float], after: dict[str, float]) -> dict[str, Change]:
    return {c.value: Change(before.get(c.value, 0.0), after.get(c.value, 0.0)) for c in CAUSES}


def _worker_diff(before: WorkerSummary, after: WorkerSummary, config: DiffConfig) -> WorkerDiff:
    return WorkerDiff(before.worker.label, after.worker.label,
                      _step_time(before.steps.wall_us, after.steps.wall_us, config),
                      Change(before.idle_us, after.idle_us), Change(before.busy_us, after.busy_us),
                      _by_cause(before.idle_by_cause, after.idle_by_cause))


def _pair_workers(before: list[WorkerSummary], after: list[WorkerSummary]):
    """(before, after) pairs: same label first, then the rest in label order; and the unpaired."""
    label = lambda w: w.worker.label  # noqa: E731
    by_label = {label(w): w for w in after}
    pairs = [(b, by_label[label(b)]) for b in before if label(b) in by_label]
    taken = {label(b) for b, _ in pairs}
    rest_before = sorted((w for w in before if label(w) not in taken), key=label)
    rest_after = sorted((w for w in after if label(w) not in taken), key=label)
    pairs += list(zip(rest_before, rest_after))
    n = min(len(rest_before), len(rest_after))
    return pairs, {"before": [label(w) for w in rest_before[n:]], "after": [label(w) for w in rest_after[n:]]}
