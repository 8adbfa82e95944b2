"""The truth harness' bootstrap (tests/support/bootstrap.py), by which the corpus' A/B bounds are
widened: the half width of a statistic's 95% interval over pairs of runs."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.bootstrap import half_width


def median(rows: np.ndarray) -> np.ndarray:
    return np.median(rows, axis=-1)


def test_pairs_that_agree_give_no_width_and_none_give_nan():
    assert half_width(np.full(10, 3.5), median) == 0.0
    assert math.isnan(half_width(np.array([]), median))


def test_the_width_scales_with_the_spread_and_ignores_the_level():
    rows = np.random.default_rng(1).normal(0.0, 1.0, 10)
    assert half_width(3 * rows, median) == pytest.approx(3 * half_width(rows, median))
    assert half_width(rows + 100.0, median) == pytest.approx(half_width(rows, median))


def test_the_median_of_ten_pairs_is_inside_its_interval_about_95_percent_of_the_time():
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(300):
        rows = rng.normal(5.0, 1.0, 10)
        covered += abs(np.median(rows) - 5.0) <= half_width(rows, median)
    # A percentile bootstrap of a median over ten rows is a little narrow; it is not a point either.
    assert 0.80 <= covered / 300 <= 0.99, covered


def test_the_same_rows_give_the_same_width():
    rows = np.random.default_rng(3).normal(0.0, 1.0, 12)
    assert half_width(rows, median) == half_width(rows.copy(), median)
