"""Interval arithmetic on numpy arrays (start and end columns, microseconds).

Contract: every function takes and returns parallel ``(starts, ends)`` float64 arrays; results
are sorted and disjoint. Empty and zero-length intervals are dropped.
"""
from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of possibly overlapping intervals, as sorted disjoint intervals. Temporaries: the
    sort's order, then the sorted copies (about 24 bytes an interval besides the arguments)."""
    keep = ends > starts
    if not keep.all():
        starts, ends = starts[keep], ends[keep]
    del keep
    if starts.size == 0:
        return starts.astype(np.float64), ends.astype(np.float64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    del order
    running_end = np.maximum.accumulate(ends, out=ends)  # ends is the sorted copy: in place
    # A new merged interval begins where a start lies beyond every earlier end.
    new = np.empty(starts.size, bool)
    new[0] = True
    np.greater(starts[1:], running_end[:-1], out=new[1:])
    first = np.flatnonzero(new)
    del new
    last = np.append(first[1:] - 1, starts.size - 1)
    return starts[first], running_end[last]


def clip(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    s, e = np.maximum(starts, lo), np.minimum(ends, hi)
    keep = e > s
    return s[keep], e[keep]


def complement(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The parts of [lo, hi] not covered by the given sorted disjoint intervals."""
    s, e = clip(starts, ends, lo, hi)
    gap_starts = np.concatenate(([lo], e))
    gap_ends = np.concatenate((s, [hi]))
    keep = gap_ends > gap_starts
    return gap_starts[keep], gap_ends[keep]


def total(starts: np.ndarray, ends: np.ndarray) -> float:
    return float(np.sum(ends - starts)) if starts.size else 0.0


def covering(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For sorted disjoint intervals: the index of the interval holding each point, else -1."""
    idx = np.searchsorted(starts, points, side="right") - 1
    inside = (idx >= 0) & (points < ends[np.maximum(idx, 0)]) if starts.size else np.zeros(points.shape, bool)
    return np.where(inside, idx, -1)


def measure_before(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For sorted disjoint intervals: how much of them lies before each point."""
    if starts.size == 0:
        return np.zeros(points.shape)
    cumulative = np.concatenate(([0.0], np.cumsum(ends - starts)))
    k = np.searchsorted(starts, points, side="right")
    before = cumulative[k]
    last = np.maximum(k - 1, 0)
    overhang = np.where(k > 0, np.maximum(ends[last] - points, 0.0), 0.0)
    return before - overhang


def measure_between(starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For sorted disjoint intervals: how much of them lies in each [a, b]."""
    return measure_before(starts, ends, b) - measure_before(starts, ends, a)
