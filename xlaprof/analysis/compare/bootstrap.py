"""Confidence intervals for the change of a step-time quantile between two sessions.

Contract: ``quantile_change_cis(before, after, qs)`` returns, per quantile ``q`` of ``qs``,
``(low, high)``: the 95% (``level``) confidence interval of ``quantile(after, q) /
quantile(before, q) - 1``, the relative change of the q-quantile of per-step times; ``None``
for every ``q`` when either side has fewer than ``MIN_STEPS`` steps (too few for an interval
that means anything).

Method: the percentile bootstrap over steps, with the two sessions resampled independently.
Each of ``resamples`` rounds draws ``len(before)`` steps with replacement from ``before`` and
``len(after)`` from ``after`` and computes the relative change of their q-quantiles (numpy's
linear interpolation; every ``q`` from the same draws); the interval is the ``(1 - level) / 2``
and ``(1 + level) / 2`` quantiles of those changes. It assumes steps are exchangeable within a session (no trend inside a capture).
The draws come from ``numpy.random.default_rng(seed)``, so the same inputs always give the same
interval, and all rounds are computed as arrays, in chunks of at most ``CHUNK_ELEMENTS`` drawn
steps so memory stays bounded for long captures.
"""
from __future__ import annotations

import numpy as np

MIN_STEPS = 5  # fewer steps than this on either side: no interval
CHUNK_ELEMENTS = 4_000_000  # drawn steps per chunk of rounds (32 MB of float64 per side)


def quantile_change_cis(before: np.ndarray, after: np.ndarray, qs: tuple[float, ...], *, resamples: int = 2000,
                        level: float = 0.95, seed: int = 0) -> list[tuple[float, float] | None]:
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if min(before.size, after.size) < MIN_STEPS:
        return [None] * len(qs)
    rng = np.random.default_rng(seed)
    changes = np.empty((len(qs), resamples))
    rounds = max(1, CHUNK_ELEMENTS // max(before.size, after.size))
    for first in range(0, resamples, rounds):
        k = min(rounds, resamples - first)
        b = np.quantile(before[rng.integers(0, before.size, (k, before.size))], qs, axis=1)
        a = np.quantile(after[rng.integers(0, after.size, (k, after.size))], qs, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            changes[:, first:first + k] = np.where(b > 0, a / b - 1.0, np.nan)
    tail = (1.0 - level) / 2
    bounds = np.nanquantile(changes, [tail, 1.0 - tail], axis=1)
    return [(float(low), float(high)) for low, high in bounds.T]
