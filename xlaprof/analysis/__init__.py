"""The analyses: pure functions over a loaded session's event tables, returning typed results.

``analyze(session)`` runs them all and returns a ``SessionAnalysis``. The pipeline, one module
each: ``device_timeline`` (when each device executed) -> ``host_activity`` and ``span_index``
(what the host did, in which user span) -> ``attribution`` (every idle microsecond to a cause)
-> ``compiles``, ``reads``, ``steps``, ``worker_comparison`` -> ``findings`` (ranked, with
advice). ``intervals`` is the interval arithmetic they share; ``debug_file`` reads torch_xla's
PT_XLA_DEBUG_FILE. Nothing here plots, writes or serializes (see ``xlaprof.report``).
"""
from __future__ import annotations

from xlaprof.analysis.session_analysis import AnalysisConfig, SessionAnalysis, WorkerAnalysis, analyze

__all__ = ["analyze", "AnalysisConfig", "SessionAnalysis", "WorkerAnalysis"]
