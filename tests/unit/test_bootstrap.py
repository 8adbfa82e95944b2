"""The bootstrap interval of a step-time change: it finds a real shift, covers zero for samples of
one distribution about 95% of the time, is reproducible, and stays the same when chunked."""
from __future__ import annotations

import numpy as np
import pytest

from xlaprof.analysis.compare import bootstrap
from xlaprof.analysis.compare.bootstrap import MIN_STEPS, quantile_change_cis


def quantile_change_ci(before, after, q: float, **options):
    (ci,) = quantile_change_cis(before, after, (q,), **options)
    return ci


def _steps(rng, n: int, median_us: float) -> np.ndarray:
    return median_us * rng.lognormal(0.0, 0.1, n)


def test_a_ten_percent_slower_median_is_found_and_bracketed():
    rng = np.random.default_rng(1)
    before, after = _steps(rng, 300, 10_000.0), _steps(rng, 300, 11_000.0)
    low, high = quantile_change_ci(before, after, 0.5)
    assert 0 < low < 0.10 < high < 0.2


def test_samples_of_one_distribution_give_intervals_that_cover_zero_about_95_percent_of_the_time():
    rng = np.random.default_rng(2)
    trials = 200
    covered = sum(low <= 0 <= high for low, high in (
        quantile_change_ci(_steps(rng, 40, 5000.0), _steps(rng, 40, 5000.0), 0.5, resamples=1000, seed=t)
        for t in range(trials)))
    assert 0.88 * trials <= covered <= trials


def test_the_same_steps_twice_give_an_interval_around_zero():
    steps = _steps(np.random.default_rng(3), 100, 2000.0)
    low, high = quantile_change_ci(steps, steps.copy(), 0.5)
    assert low < 0 < high


def test_seeded_so_the_same_inputs_give_the_same_interval():
    rng = np.random.default_rng(4)
    before, after = _steps(rng, 50, 1000.0), _steps(rng, 60, 1100.0)
    assert quantile_change_ci(before, after, 0.9) == quantile_change_ci(before, after, 0.9)
    assert quantile_change_ci(before, after, 0.9, seed=1) != quantile_change_ci(before, after, 0.9, seed=2)


def test_too_few_steps_give_no_interval():
    assert quantile_change_ci(np.ones(MIN_STEPS - 1), np.ones(100), 0.5) is None
    assert quantile_change_ci(np.ones(100), np.ones(MIN_STEPS), 0.5) is not None


def test_chunked_rounds_give_an_interval_like_unchunked_ones(monkeypatch):
    rng = np.random.default_rng(5)
    before, after = _steps(rng, 500, 1000.0), _steps(rng, 500, 1050.0)
    whole = quantile_change_ci(before, after, 0.5)
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 7 * 500)  # 7 rounds per chunk, a ragged last chunk
    chunked = quantile_change_ci(before, after, 0.5)
    assert chunked == pytest.approx(whole, abs=0.01)


def test_several_quantiles_come_from_the_same_draws():
    rng = np.random.default_rng(6)
    before, after = _steps(rng, 80, 1000.0), _steps(rng, 90, 1200.0)
    median, p90 = quantile_change_cis(before, after, (0.5, 0.9))
    assert median == quantile_change_ci(before, after, 0.5) and p90 == quantile_change_ci(before, after, 0.9)
    assert quantile_change_cis(before, after[:3], (0.5, 0.9)) == [None, None]
