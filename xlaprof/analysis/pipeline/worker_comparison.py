"""Compare the workers of a multi-worker session: steps side by side, and the stragglers.

Contract: ``compare_workers(workers)`` returns a ``WorkerComparison``:
- ``step_alignment``: for each step number that every worker ran (the same step of a data- or
  model-parallel job), each worker's wall time and start time (ns since the epoch, so a late
  starter shows), at most ``MAX_ALIGNED_STEPS`` of them;
- ``per_worker``: each worker's median step time and its idle time by cause inside its steps;
- ``slowest_in_steps``: per worker, in how many of the steps every worker ran it was the slowest
  by more than ``TIE_SHARE`` of the step (most steps first; a step the slowest workers tie in counts
  for none: identical workers have no slowest);
- ``stragglers``: the workers whose median step is more than ``STRAGGLER_RATIO`` times the
  median of all workers' medians, slowest first, each with how much slower, the idle cause that
  dominates its steps (``main_cause``), and why it is slower: the idle cause it has the most more
  of per step than the median worker (``excess_cause``, by ``excess_cause_us_per_step``; on a loaded
  host every worker's dominant cause can be its Python, while a straggler's excess is its sleep).
  Empty with fewer than two workers with steps.
``cause_above_median(idle_per_step, worker)``: that cause and its excess, from each worker's idle
per step by cause (the text report's pod lines use it too).
``common_step_rows(workers)``: the step numbers every one of ``workers`` (with steps) ran, sorted,
and per worker the row of each in its ``StepTable`` (the views' grid of workers x steps).
Times in microseconds; workers are named by their label (``host:port``). ``workers`` are the
``WorkerSummary``s of a session.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.analysis.pipeline.worker_summary import WorkerSummary

MAX_ALIGNED_STEPS = 500
STRAGGLER_RATIO = 1.10  # a worker 10% slower per step than the typical worker is a straggler
TIE_SHARE = 0.02  # steps whose slowest workers are within 2% of each other have no slowest worker


@dataclass(frozen=True)
class AlignedStep:
    step: int
    wall_us: dict[str, float]  # worker -> the step's wall time
    start_unix_ns: dict[str, int]  # worker -> when it started, ns since the epoch


@dataclass(frozen=True)
class WorkerSteps:
    steps: int
    median_step_us: float
    busy_us: float  # device busy time inside steps, summed over devices
    idle_by_cause_us: dict[str, float]  # idle time inside steps, by cause


@dataclass(frozen=True)
class Straggler:
    worker: str
    median_step_us: float
    slower_by_us: float  # than the typical worker's median step
    main_cause: str  # the idle cause that dominates its steps
    main_cause_us_per_step: float
    excess_cause: str  # why it is slower: the idle cause it has the most more of than the median worker
    excess_cause_us_per_step: float  # its idle of that cause per step minus the median worker's


@dataclass
class WorkerComparison:
    __repr__ = short_repr
    step_alignment: list[AlignedStep] = field(default_factory=list)
    per_worker: dict[str, WorkerSteps] = field(default_factory=dict)
    stragglers: list[Straggler] = field(default_factory=list)
    slowest_in_steps: dict[str, int] = field(default_factory=dict)


def compare_workers(workers: list[WorkerSummary]) -> WorkerComparison:
    stepped = [w for w in workers if len(w.steps)]
    per_worker = {}
    for w in stepped:
        idle = w.steps.idle_us.sum(axis=0)
        per_worker[w.worker.label] = WorkerSteps(
            len(w.steps), float(np.median(w.steps.wall_us)), float(w.steps.busy_us.sum()),
            {c.value: float(idle[k]) for k, c in enumerate(CAUSES)})
    return WorkerComparison(_align(stepped), per_worker, _stragglers(stepped, per_worker), _slowest(stepped))


def cause_above_median(idle_per_step: dict[str, dict[str, float]], worker: str) -> tuple[str, float]:
    """The idle cause ``worker`` has the most more of per step than the median worker, and how much
    more (us per step); ``idle_per_step``: worker -> cause -> idle us per step, every worker."""
    median = {c: float(np.median([p[c] for p in idle_per_step.values()])) for c in idle_per_step[worker]}
    cause = max(median, key=lambda c: idle_per_step[worker][c] - median[c])
    return cause, idle_per_step[worker][cause] - median[cause]


def common_step_rows(workers: list[WorkerSummary]) -> tuple[np.ndarray, list[np.ndarray]]:
    if not workers:
        return np.zeros(0, np.int64), []
    common = np.unique(workers[0].steps.step)
    for w in workers[1:]:
        common = np.intersect1d(common, w.steps.step)
    return common, [_rows_of(w.steps.step, common) for w in workers]


def _slowest(workers: list[WorkerSummary]) -> dict[str, int]:
    if len(workers) < 2:
        return {}
    common, rows = common_step_rows(workers)
    walls = np.stack([w.steps.wall_us[r] for w, r in zip(workers, rows)])
    if not common.size:
        return {}
    ranked = np.sort(walls, axis=0)
    clear = ranked[-1] - ranked[-2] > TIE_SHARE * ranked[-1]
    counts = np.bincount(walls.argmax(axis=0)[clear], minlength=len(workers))
    found = {w.worker.label: int(n) for w, n in zip(workers, counts) if n}
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def _rows_of(steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The row of each ``wanted`` step number (its first) in ``steps``."""
    order = np.argsort(steps, kind="stable")
    return order[np.searchsorted(steps[order], wanted)]


def _align(workers: list[WorkerSummary]) -> list[AlignedStep]:
    if len(workers) < 2:
        return []
    common = set(workers[0].steps.step.tolist())
    for w in workers[1:]:
        common &= set(w.steps.step.tolist())
    rows = []
    for n in sorted(common)[:MAX_ALIGNED_STEPS]:
        wall, start = {}, {}
        for w in workers:
            i = int(np.flatnonzero(w.steps.step == n)[0])
            wall[w.worker.label] = float(w.steps.wall_us[i])
            start[w.worker.label] = int(w.origin_ns + w.steps.start_us[i] * 1000)
        rows.append(AlignedStep(int(n), wall, start))
    return rows


def _stragglers(workers: list[WorkerSummary], per_worker: dict[str, WorkerSteps]) -> list[Straggler]:
    if len(workers) < 2:
        return []
    typical = float(np.median([p.median_step_us for p in per_worker.values()]))
    per_step = {label: {c: us / max(p.steps, 1) for c, us in p.idle_by_cause_us.items()}
                for label, p in per_worker.items()}
    found = []
    for w in workers:
        label = w.worker.label
        mine = per_worker[label]
        if typical <= 0 or mine.median_step_us <= STRAGGLER_RATIO * typical:
            continue
        cause = max(per_step[label], key=per_step[label].get)
        excess_cause, excess_us = cause_above_median(per_step, label)
        found.append(Straggler(label, mine.median_step_us, mine.median_step_us - typical, cause,
                               per_step[label][cause], excess_cause, excess_us))
    return sorted(found, key=lambda s: -s.slower_by_us)
