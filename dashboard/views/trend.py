"""The trend of a logdir's sessions (a long job captured periodically), for the sessions page.

Contract: ``trend_series(listed)`` takes ``summary.logdir_figures`` rows and returns a
``TrendSeries`` of the sessions that could be analysed, oldest first: run, date, idle share (%)
and median step time (ms; NaN for a session without steps). The page draws it where at least
``MIN_SESSIONS`` sessions have figures.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dashboard.views.axis import AXIS_UNIT_US
from dashboard.views.overview import session_date
from xlaprof.analysis.pipeline.summary import ListedSession

MIN_SESSIONS = 2


@dataclass(frozen=True)
class TrendSeries:
    run: list[str]
    date: list[str]  # "YYYY-MM-DD HH:MM:SS", local time
    idle_pct: np.ndarray
    step_median_ms: np.ndarray  # NaN: no steps

    def __len__(self) -> int:
        return len(self.run)


def trend_series(listed: list[ListedSession]) -> TrendSeries:
    rows = sorted((r for r in listed if r.figures is not None), key=lambda r: (r.session.created_unix, r.session.run))
    return TrendSeries(
        [r.session.run for r in rows],
        [session_date(r.session) for r in rows],
        np.array([100 * r.figures.idle_share for r in rows]),
        np.array([r.figures.step_median_us / AXIS_UNIT_US if r.figures.step_median_us is not None else np.nan
                  for r in rows]))
