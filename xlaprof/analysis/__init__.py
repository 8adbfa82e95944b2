"""The analyses: pure functions over a loaded session's event tables, returning typed results.

``analyze(session)`` runs them all and returns a ``SessionAnalysis``. The stages, in pipeline
order, one subpackage each (a stage imports only the stages before it; tests/unit/
test_architecture.py checks it): ``common`` (interval arithmetic, reprs, notebook tables) ->
``host`` (what the host did, in which user span, on which Python line) -> ``device`` (when each
device executed, which program, device time by graph and line) -> ``compiles`` (compile records,
how compiled graphs differ, why a place recompiled) -> ``idle`` (every idle microsecond to a cause;
idle by line, steps, reads) -> ``findings`` (ranked, with advice, recompilations explained) -> ``pipeline`` (per worker,
then merged: ``analyze``, ``SessionAnalysis``, worker comparison, session figures) -> ``compare``
(two sessions: ``xlaprof diff`` and its budgets). Nothing here plots, writes or serializes (see
``xlaprof.report``).
"""
from __future__ import annotations

from xlaprof.analysis.pipeline.session_analysis import AnalysisConfig, SessionAnalysis, WorkerAnalysis, analyze

__all__ = ["analyze", "AnalysisConfig", "SessionAnalysis", "WorkerAnalysis"]
