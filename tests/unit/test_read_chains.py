"""Where a read's chain of runtime events began (``host_activity._chain_starts``), checked against the
rule walked one event at a time, on random runtime events and reads."""
from __future__ import annotations

import numpy as np
import pytest

from xlaprof.analysis.host.host_activity import READ_JOIN_US, _chain_starts


def _walked(r_start: np.ndarray, r_end: np.ndarray, t: float) -> float:
    """The rule itself: from the last event begun before ``t`` back, an event joins while the chain so
    far begins within READ_JOIN_US of the furthest end of the events begun up to it."""
    k = int(np.searchsorted(r_start, t, side="left")) - 1
    begun = t
    while k >= 0 and begun - r_end[:k + 1].max() <= READ_JOIN_US:
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


def test_a_sync_waiting_for_its_execution_joins_though_its_nested_events_ended_long_before():
    # A CPU fallback's inputs read on the autograd engine's thread (torch_xla 2.9, CPU device): the sync
    # runs 421 us (its graph executing), its nested barrier ends after 4 us, the transfer follows the sync.
    r_start = np.array([3311.0, 3311.0, 3313.0, 3319.0, 3328.0, 3328.0])  # sync, collect, extract, post order, ...
    r_end = np.array([3732.0, 3313.0, 3319.0, 3326.0, 3731.0, 3332.0])  # ... schedule (403 us), barrier (4 us)
    assert _chain_starts(r_start, r_end, np.array([3734.0])).tolist() == [3311.0]
