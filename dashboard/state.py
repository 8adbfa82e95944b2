"""What every page and callback of one app shares: the logdir, the analysis cache, the view config.

Contract: ``AppState.entry(run)`` is the only way a page reaches a session. It resolves ``run``
through ``logdir_guard.resolve_run`` (so a URL never reaches a file outside the logdir) and
serves the analysis from the ``AnalysisCache`` (so a request never re-reads an unchanged
session). It raises ``RunNotFoundError`` for an unknown or hostile id and ``SessionLoadError``
for a session that cannot be analysed. ``timeline``/``gaps``/``flame``/``flame_figure``/``overview``/``verdict`` are the derived views,
computed once per cached analysis. ``listing()`` lists the logdir's sessions with their figures
from the logdir's persisted ``SessionIndex`` (a restart re-analyses no unchanged session; what
is computed goes through the analysis cache); ``compare(before, after)`` the compare page's view
of two sessions, computed once per pair of cached analyses. ``captures`` runs the captures started
from the capture form, within ``allow_remote_capture``'s address rule (``data.capture_job``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dashboard import figures
from dashboard.data.analysis_cache import AnalysisCache, CachedAnalysis
from dashboard.data.capture_job import CaptureJobs
from dashboard.data.logdir_guard import listed_sessions, resolve_run
from dashboard.views.compare import CompareView, compare_view
from dashboard.views.flame import Flame, idle_flame
from dashboard.views.gap_table import GapColumns, gap_columns
from dashboard.views.overview import Overview, overview, verdict
from dashboard.views.timeline import SessionTimeline, ViewConfig, session_timeline
from xlaprof.analysis.compare.session_diff import diff_sessions
from xlaprof.analysis.pipeline.summary import FIGURES_VERSION, ListedSession, logdir_figures
from xlaprof.session.index import SessionIndex


@dataclass
class AppState:
    logdir: str
    cache: AnalysisCache = field(default_factory=AnalysisCache)
    view_config: ViewConfig = field(default_factory=ViewConfig)
    allow_remote_capture: bool = False  # the capture form may name other hosts than this machine
    index: SessionIndex = field(init=False)
    captures: CaptureJobs = field(init=False)  # captures started from the dashboard, one at a time

    def __post_init__(self) -> None:
        self.index = SessionIndex.open(self.logdir, FIGURES_VERSION)
        self.captures = CaptureJobs(self.logdir)

    def entry(self, run: object) -> CachedAnalysis:
        return self.cache.get(resolve_run(self.logdir, run))

    def timeline(self, run: object) -> SessionTimeline:
        return self.entry(run).derived("timeline", session_timeline)

    def gaps(self, run: object) -> GapColumns:
        return self.entry(run).derived("gaps", gap_columns)

    def flame(self, run: object) -> Flame:
        return self.entry(run).derived("flame", idle_flame)

    def flame_figure(self, run: object) -> dict | None:
        """The icicle as it opens (None for a session without stacks), drawn once per analysis."""
        flame = self.flame(run)  # first: derived() holds the entry's lock while it builds
        return self.entry(run).derived("flame-figure", lambda _: figures.flame_figure(flame).to_dict()
                                       if flame.nodes else None)

    def overview(self, run: object) -> Overview:
        return self.entry(run).derived("overview", overview)

    def verdict(self, run: object) -> str:
        return self.entry(run).derived("verdict", verdict)

    def listing(self) -> list[ListedSession]:
        """Every session of the logdir that lies inside it, newest first, with its figures or its error."""
        return logdir_figures(self.logdir, index=self.index, sessions=listed_sessions(self.logdir),
                              analysis_of=lambda run_dir: self.cache.get(run_dir).analysis)

    def compare(self, before: object, after: object) -> CompareView:
        """Computed once per pair of cached analyses (the diff's bootstrap is seeded: the same pair,
        the same view), held by the after session's entry."""
        first = self.entry(before)
        return self.entry(after).derived(f"compare:{first.run_dir}:{first.identity}",
                                         lambda analysis: compare_view(diff_sessions(first.analysis, analysis)))
