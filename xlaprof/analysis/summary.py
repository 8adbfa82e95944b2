"""The figures of one session that listings, trends and comparisons need, read off an analysis.

Contract (times in microseconds of device time summed over devices, like the JSON report):
- ``step_times(workers)``: the wall time of each step of a session, in step-number order. With
  several workers, per step number the slowest worker's time: a synchronous job's step lasts as
  long as its slowest worker. Empty where no worker has steps.
- ``session_figures(analysis)``: a ``SessionFigures`` (window, busy, idle and idle by cause,
  workers, devices, steps and their median and p90 time, events), small and JSON-ready through
  ``to_dict``/``from_dict``, so ``session.index`` can persist it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from xlaprof.analysis.session_analysis import SessionAnalysis, WorkerAnalysis

P90 = 0.9


@dataclass(frozen=True)
class SessionFigures:
    window_us: float  # the analysed window (the longest worker's)
    busy_us: float
    idle_us: float
    idle_by_cause_us: dict[str, float]  # cause -> us; adds up to idle_us
    workers: list[str]  # worker labels (host:port)
    devices: int
    steps: int  # steps of the session (step numbers, across workers)
    step_median_us: float | None  # None: no steps
    step_p90_us: float | None
    events: int

    @property
    def idle_share(self) -> float:
        total = self.busy_us + self.idle_us
        return self.idle_us / total if total > 0 else 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SessionFigures:
        return cls(**data)


def step_times(workers: list[WorkerAnalysis]) -> np.ndarray:
    tables = [w.steps for w in workers if len(w.steps)]
    if not tables:
        return np.zeros(0)
    numbers = np.concatenate([t.step for t in tables])
    steps, which = np.unique(numbers, return_inverse=True)
    slowest = np.zeros(steps.size)
    np.maximum.at(slowest, which, np.concatenate([t.wall_us for t in tables]))
    return slowest


def session_figures(analysis: SessionAnalysis) -> SessionFigures:
    times = step_times(analysis.workers)
    median, p90 = (float(v) for v in np.quantile(times, [0.5, P90])) if times.size else (None, None)
    return SessionFigures(
        window_us=analysis.window_us, busy_us=analysis.busy_us, idle_us=analysis.idle_us,
        idle_by_cause_us=analysis.idle_by_cause, workers=[w.worker.label for w in analysis.workers],
        devices=sum(len(w.devices) for w in analysis.workers), steps=int(times.size),
        step_median_us=median, step_p90_us=p90, events=analysis.session.event_count)
