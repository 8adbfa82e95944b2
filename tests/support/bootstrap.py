"""How precise a measurement over pairs of A/B runs is: the half width of a statistic's 95% bootstrap
interval (``half_width(rows, statistic)``: ``rows`` resampled with replacement ``RESAMPLES`` times,
with a fixed seed, so the same runs give the same interval)."""
from __future__ import annotations

import numpy as np

RESAMPLES = 2000


def half_width(rows: np.ndarray, statistic) -> float:
    """``statistic`` maps rows stacked as (resamples, len(rows), ...) to one value per resample."""
    if len(rows) == 0:
        return float("nan")
    picks = np.random.default_rng(0).integers(0, len(rows), (RESAMPLES, len(rows)))
    low, high = np.percentile(statistic(np.asarray(rows)[picks]), [2.5, 97.5])
    return float(high - low) / 2
