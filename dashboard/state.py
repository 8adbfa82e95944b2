"""What every page and callback of one app shares: the logdir, the analysis cache, the view config.

Contract: ``AppState.entry(run)`` is the only way a page reaches a session. It resolves ``run``
through ``logdir_guard.resolve_run`` (so a URL never reaches a file outside the logdir) and
serves the analysis from the ``AnalysisCache`` (so a request never re-reads an unchanged
session). It raises ``RunNotFoundError`` for an unknown or hostile id and ``SessionLoadError``
for a session that cannot be analysed. ``timeline``/``gaps``/``flame``/``overview`` are the derived views,
computed once per cached analysis.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dashboard.views.analysis_cache import AnalysisCache, CachedAnalysis
from dashboard.views.flame import Flame, idle_flame
from dashboard.views.gap_table import GapColumns, gap_columns
from dashboard.views.logdir_guard import resolve_run
from dashboard.views.overview import Overview, overview, session_row
from dashboard.views.timeline import SessionTimeline, ViewConfig, session_timeline
from xlaprof.errors import XlaprofError
from xlaprof.session import SessionSummary, list_sessions


@dataclass
class AppState:
    logdir: str
    cache: AnalysisCache = field(default_factory=AnalysisCache)
    view_config: ViewConfig = field(default_factory=ViewConfig)

    def entry(self, run: object) -> CachedAnalysis:
        return self.cache.get(resolve_run(self.logdir, run))

    def timeline(self, run: object) -> SessionTimeline:
        return self.entry(run).derived("timeline", session_timeline)

    def gaps(self, run: object) -> GapColumns:
        return self.entry(run).derived("gaps", gap_columns)

    def flame(self, run: object) -> Flame:
        return self.entry(run).derived("flame", idle_flame)

    def overview(self, run: object) -> Overview:
        return self.entry(run).derived("overview", overview)

    def session_rows(self) -> list[dict]:
        """One row per session of the logdir, newest first; a broken session gets its error."""
        return [self._row(summary) for summary in list_sessions(self.logdir)]

    def _row(self, summary: SessionSummary) -> dict:
        try:
            return self.cache.remember(summary.path, "row", lambda e: session_row(summary, e.analysis))
        except XlaprofError as exc:
            return session_row(summary, None, str(exc))
