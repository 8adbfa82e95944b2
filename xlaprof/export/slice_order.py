"""The order in which a track's slices begin and end, for formats that write them as two events.

Contract: ``begin_end_order(start, end)`` takes the slices of one track in the times that will be
written (rounded already: two slices that touch once rounded must be seen touching) and returns
the sequence of ``(slice index, is_begin)`` records, by time, such that properly nested slices
nest: at one time ends come before begins, slices that begin together begin longest first, and
slices that end together end last-begun first. Slices of zero length are left out
(``instants(start, end)`` lists them: they are written as instants).
"""
from __future__ import annotations

import numpy as np


def instants(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    return np.flatnonzero(end <= start)


def begin_end_order(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(slice index, is_begin) of each record, in the order to write them."""
    timed = np.flatnonzero(end > start)
    s, e = start[timed], end[timed]
    time = np.concatenate([s, e])
    phase = np.concatenate([np.ones(timed.size, np.int8), np.zeros(timed.size, np.int8)])  # ends first
    tie = np.concatenate([-e, -s])  # begins: longest first; ends: last begun first
    order = np.lexsort((tie, phase, time))
    return np.concatenate([timed, timed])[order], phase[order].astype(bool)
