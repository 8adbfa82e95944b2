"""Where a read's chain of runtime events began (``host_activity._chain_starts``), checked against the
rule walked one event at a time, on random runtime events and reads."""
from __future__ import annotations

import numpy as np
import pytest

from xlaprof.analysis.host.host_activity import READ_JOIN_US, _chain_starts


def _walked(r_start: np.ndarray, r_end: np.ndarray, t: float) -> float:
    """The rule itself: from the last event begun before ``t`` back, an event joins while the chain so
    far begins within READ_JOIN_US of its end."""
    k = int(np.searchsorted(r_start, t, side="left")) - 1
    begun = t
    while k >= 0 and begun - r_end[k] <= READ_JOIN_US:
        begun = min(begun, r_start[k])
        k -= 1
    return begun


@pytest.mark.parametrize("seed", range(20))
def test_chain_starts_follow_the_rule_walked_an_event_at_a_time(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    r_start = np.sort(rng.uniform(0, 5000, n))
    r_end = r_start + rng.exponential(80, n)  # nested and overlapping events as well
    times = np.sort(rng.uniform(0, 5500, 40))
    expected = [_walked(r_start, r_end, t) for t in times.tolist()]
    np.testing.assert_array_equal(_chain_starts(r_start, r_end, times), expected)
