"""Interval arithmetic: exact cases, and properties checked against a unit-grid brute force."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xlaprof.analysis.common import intervals

A = np.array


def test_merge_overlapping_touching_nested_and_empty():
    s, e = intervals.merge(A([5.0, 0.0, 2.0, 10.0, 12.0, 20.0]), A([7.0, 3.0, 4.0, 11.0, 12.0, 25.0]))
    # [0,3]+[2,4] overlap, [5,7] stands alone, [12,12] is empty, [20,25] alone.
    assert s.tolist() == [0.0, 5.0, 10.0, 20.0] and e.tolist() == [4.0, 7.0, 11.0, 25.0]
    s, e = intervals.merge(A([0.0, 1.0, 3.0]), A([10.0, 2.0, 3.5]))  # nested in the first
    assert s.tolist() == [0.0] and e.tolist() == [10.0]
    s, e = intervals.merge(A([0.0, 2.0]), A([2.0, 3.0]))  # touching: one interval
    assert s.tolist() == [0.0] and e.tolist() == [3.0]
    s, e = intervals.merge(A([]), A([]))
    assert s.size == 0 and e.size == 0


def test_clip_and_complement():
    s, e = intervals.clip(A([0.0, 5.0, 9.0]), A([3.0, 8.0, 12.0]), 2.0, 10.0)
    assert s.tolist() == [2.0, 5.0, 9.0] and e.tolist() == [3.0, 8.0, 10.0]
    g0, g1 = intervals.complement(A([0.0, 5.0]), A([3.0, 8.0]), 0.0, 10.0)
    assert g0.tolist() == [3.0, 8.0] and g1.tolist() == [5.0, 10.0]  # no empty gap at 0
    g0, g1 = intervals.complement(A([]), A([]), 1.0, 4.0)
    assert g0.tolist() == [1.0] and g1.tolist() == [4.0]
    g0, g1 = intervals.complement(A([-5.0]), A([50.0]), 0.0, 10.0)
    assert g0.size == 0


def test_total_covering_and_measure_before():
    s, e = A([1.0, 5.0]), A([3.0, 9.0])
    assert intervals.total(s, e) == 6.0
    assert intervals.total(A([]), A([])) == 0.0
    points = A([0.0, 1.0, 2.9, 3.0, 4.0, 5.0, 9.0, 10.0])
    assert intervals.covering(s, e, points).tolist() == [-1, 0, 0, -1, -1, 1, -1, -1]
    assert intervals.covering(A([]), A([]), points).tolist() == [-1] * 8
    assert intervals.measure_before(s, e, points).tolist() == pytest.approx([0, 0, 1.9, 2, 2, 2, 6, 6])
    assert intervals.measure_before(A([]), A([]), points).tolist() == [0.0] * 8


spans = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 10)), max_size=12)


def _grid(starts, ends, lo=0, hi=60):
    """Which unit cells [k, k+1) of [lo, hi) the intervals cover."""
    cells = np.zeros(hi - lo, bool)
    for s, e in zip(starts, ends):
        cells[max(int(s), lo) - lo:max(min(int(e), hi), lo) - lo] = True
    return cells


@settings(max_examples=200, deadline=None)
@given(spans, st.integers(0, 30), st.integers(0, 30))
def test_properties_against_brute_force(pairs, lo, width):
    starts = A([float(a) for a, _ in pairs])
    ends = A([float(a + d) for a, d in pairs])
    ms, me = intervals.merge(starts, ends)
    assert np.all(ms[1:] > me[:-1]) and np.all(me > ms)  # sorted, disjoint, non-empty
    assert np.array_equal(_grid(ms, me), _grid(starts, ends))
    hi = lo + width
    g0, g1 = intervals.complement(ms, me, float(lo), float(hi))
    inside = np.zeros(60, bool)
    inside[lo:hi] = True
    assert np.array_equal(_grid(g0, g1), inside & ~_grid(ms, me))
    points = np.arange(0.5, 60.0, 1.0)
    covered = intervals.covering(ms, me, points) >= 0
    assert np.array_equal(covered, _grid(ms, me))
    before = intervals.measure_before(ms, me, points)
    assert np.allclose(before, np.cumsum(_grid(ms, me)) - 0.5 * _grid(ms, me))
