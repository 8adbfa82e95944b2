"""The A/B truth of a read's cost, from one capture of a workload run with ``ab_harness``'s
``--alternate-reads`` (and ``--pin-cores``).

Contract: ``arm_runs(analysis)`` is, per arm (``ab_harness.READS_ARM``, ``NO_READS_ARM``), one
``(wall_us, charged_us)`` per sampling run whose span lies whole inside the capture window:
the run's wall time (its span: steps, and the device work, drained at its end) and the device
idle time the analysis charged to ``transfer_from_device`` inside it. ``ab_figures(analysis)``
is the case's figures: per arm the run count and the median run wall time; ``saving_us``, the
median run of the arm with reads minus that of the arm without (the truth: what removing the
reads saves); ``charged_us``, the median charge per run with reads (the analysis' claim); both
per step when given ``steps_per_run``.
"""
from __future__ import annotations

import numpy as np

from tests.support.workloads.ab_harness import NO_READS_ARM, READS_ARM
from xlaprof.analysis.attribution import CODE, Cause


def arm_runs(analysis) -> dict[str, list[tuple[float, float]]]:
    (worker,) = analysis.workers
    spans, pieces = worker.host.spans, worker.pieces
    w0, w1 = worker.window
    read = pieces.cause == CODE[Cause.TRANSFER_FROM_DEVICE]
    p0, p1 = pieces.start_us[read], pieces.start_us[read] + pieces.dur_us[read]
    runs: dict[str, list[tuple[float, float]]] = {READS_ARM: [], NO_READS_ARM: []}
    for i, name in enumerate(spans.name):
        start, end = float(spans.start[i]), float(spans.end[i])
        if name in runs and w0 <= start and end <= w1:
            charged = float(np.clip(np.minimum(p1, end) - np.maximum(p0, start), 0, None).sum())
            runs[name].append((end - start, charged))
    return runs


def ab_figures(analysis, steps_per_run: int = 1) -> dict:
    runs = arm_runs(analysis)
    wall = {arm: float(np.median([r[0] for r in rs])) / steps_per_run if rs else float("nan")
            for arm, rs in runs.items()}
    charged = [r[1] for r in runs[READS_ARM]]
    return {"runs": {arm: len(rs) for arm, rs in runs.items()}, "wall_us": wall,
            "saving_us": wall[READS_ARM] - wall[NO_READS_ARM],
            "charged_us": float(np.median(charged)) / steps_per_run if charged else float("nan")}
