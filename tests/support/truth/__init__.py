"""The oracle: ground truth for a workload, recorded apart from xlaprof's analysis.

A corpus workload (``tests/support/corpus``) runs twice, in two processes, deterministically (same
seeds, same steps): once captured by ``xlaprof.profile`` with ``StepRecorder`` beside it (torch_xla's
metric deltas and the main thread's CPU time per step: cheap counter reads, no device sync), and once
under ``LineTracer`` (a per-line tracer over the files the user can change, which would slow the host
too much to share a window with the capture). ``table`` turns the two records into a truth table in
the analysis' own terms, and scores an analysis report against it. See ``runner`` for the process
protocol and ``table`` for the model each figure rests on.
"""
