"""Stage 6, the pipeline: the stages run per worker and merged into the session's analysis.

``session_analysis`` (``analyze(session) -> SessionAnalysis``: the per-worker analysis, the
per-worker task and the merge), ``worker_summary`` (WorkerSummary: one worker's small, picklable
share), ``worker_comparison`` (steps aligned across workers, stragglers), ``summary``
(SessionFigures, logdir_figures) and ``summary_html`` (a SessionAnalysis in a notebook).
Imports every stage before it.
"""
