"""The figures of one session that listings, trends and comparisons need, read off an analysis.

Contract (times in microseconds of device time summed over devices, like the JSON report):
- ``step_times(workers)``: the wall time of each step of a session, in step-number order. With
  several workers, per step number the slowest worker's time: a synchronous job's step lasts as
  long as its slowest worker. Empty where no worker has steps.
- ``idle_share(busy_us, idle_us)``: idle / (busy + idle), 0 where both are 0.
- ``session_figures(analysis)``: a ``SessionFigures`` (window, busy, idle and idle by cause,
  workers, devices, steps and their median and p90 time, events), small and JSON-ready through
  ``to_dict``/``from_dict``, so ``session.index`` can persist it.
- ``logdir_figures(logdir)``: every session of the logdir (newest first) with its figures, or the
  error that kept it from being analysed (a run the listing found unreadable is not opened): from the logdir's persisted ``SessionIndex`` where the
  session's files are unchanged, else computed from ``analysis_of(run_dir)`` (by default the
  session read and analysed) and persisted; ``sessions`` (by default ``list_sessions(logdir)``)
  are the ones listed, so a caller can leave some out unread. ``FIGURES_VERSION`` changes whenever what the figures
  mean changes, so figures persisted before are computed again.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from xlaprof.analysis.pipeline.session_analysis import SessionAnalysis, analyze
from xlaprof.analysis.pipeline.worker_summary import WorkerSummary
from xlaprof.session import Session, SessionSummary, list_sessions
from xlaprof.session.index import SessionIndex

P90 = 0.9
FIGURES_VERSION = "1"


def idle_share(busy_us: float, idle_us: float) -> float:
    total = busy_us + idle_us
    return idle_us / total if total > 0 else 0.0


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
        return idle_share(self.busy_us, self.idle_us)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SessionFigures:
        return cls(**data)


def step_times(workers: list[WorkerSummary]) -> np.ndarray:
    tables = [w.steps for w in workers if len(w.steps)]
    if not tables:
        return np.zeros(0)
    numbers = np.concatenate([t.step for t in tables])
    steps, which = np.unique(numbers, return_inverse=True)
    slowest = np.zeros(steps.size)
    np.maximum.at(slowest, which, np.concatenate([t.wall_us for t in tables]))
    return slowest


def session_figures(analysis: SessionAnalysis) -> SessionFigures:
    times = step_times(analysis.summaries)
    median, p90 = (float(v) for v in np.quantile(times, [0.5, P90])) if times.size else (None, None)
    return SessionFigures(
        window_us=analysis.window_us, busy_us=analysis.busy_us, idle_us=analysis.idle_us,
        idle_by_cause_us=analysis.idle_by_cause, workers=[w.worker.label for w in analysis.summaries],
        devices=sum(len(w.devices) for w in analysis.summaries), steps=int(times.size),
        step_median_us=median, step_p90_us=p90, events=analysis.event_count)


@dataclass(frozen=True)
class ListedSession:
    session: SessionSummary  # the listing: run, path, date, workers, manifest
    figures: SessionFigures | None  # None: the session could not be analysed
    error: str | None


def logdir_figures(logdir: str, *, index: SessionIndex | None = None,
                   analysis_of: Callable[[str], SessionAnalysis] | None = None,
                   sessions: list[SessionSummary] | None = None) -> list[ListedSession]:
    index = index or SessionIndex.open(logdir, FIGURES_VERSION)
    analysis_of = analysis_of or (lambda run_dir: analyze(Session.load(run_dir)))
    sessions = list_sessions(logdir) if sessions is None else sessions
    rows = []
    for session in sessions:
        if session.error is not None:  # the listing already knows it cannot be read
            rows.append(ListedSession(session, None, session.error))
            continue
        figures, error = index.summary(session, lambda run_dir: session_figures(analysis_of(run_dir)).to_dict(),
                                       SessionFigures.from_dict)
        rows.append(ListedSession(session, figures, error))
    index.save(s.run for s in sessions)
    return rows
