"""The dashboard's time axis: one axis for all workers of a session, in milliseconds.

Contract: ``AXIS_UNIT_US`` is the axis unit in microseconds (figures and tables show ms);
``worker_offsets(analysis)`` gives, per worker, the microseconds to add to that worker's times
to put them on the session axis (each worker's clock shifted by its ``origin_ns`` relative to
the earliest worker's), so the workers of a pod line up. Gaps are numbered across a session's
workers the same way: ``first_gap_ids(analysis)`` gives, per worker, the gap id of its first idle
piece (the timeline's gap markers and the gaps table share these ids).
"""
from __future__ import annotations

import numpy as np

from xlaprof.analysis import SessionAnalysis

AXIS_UNIT_US = 1000.0  # the dashboard's time axis is in milliseconds


def worker_offsets(analysis: SessionAnalysis) -> list[float]:
    origins = [w.worker.space.origin_ns if w.worker.space is not None else 0 for w in analysis.workers]
    first = min(origins, default=0)
    return [(o - first) / 1e3 for o in origins]


def first_gap_ids(analysis: SessionAnalysis) -> list[int]:
    return np.cumsum([0] + [len(w.pieces) for w in analysis.workers])[:-1].tolist()
