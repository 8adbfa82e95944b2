"""Device time that blocking reads add to the device work running while they wait.

Contract: ``busy_added(devices, programs, reads)`` returns, per read of ``reads``
(``HostActivity.transfers_from_device``, in its order), the device time (microseconds, summed over
devices) by which the device ops that ran during it took longer than the same ops take when no read
is under way: each op (``device_profile.device_ops``: the TPU planes' ``XLA Ops``, the CPU device's
thunks) that overlaps a read counts its duration beyond the median duration of the same op (same
device, same name) over its executions that overlap no read, never below zero. An op with fewer
than ``MIN_BASELINE`` executions outside reads adds nothing (no baseline to compare with). An op
belongs to the latest read that began before it ended.

Why: a read's cost is more than the idle time it causes. On the CPU device the program a read waits
for runs while the read's transfer runs, and its ops take longer: measured on the denoise loop's
A/B arms (``tests/support/ab_truth.py``), the same ops, as many of them, ran 1.4-1.8 ms a step
longer in the arm with reads (its ``add_multiply_fusion`` 1.45 ms instead of 0.26-0.37 ms at the
start of a program run during a read). That device time is part of the step time the read costs.
"""
from __future__ import annotations

import numpy as np

from xlaprof.analysis.device.device_profile import device_ops
from xlaprof.analysis.device.device_timeline import DeviceTimeline
from xlaprof.analysis.device.programs import ProgramExecutions
from xlaprof.analysis.host.host_activity import EventSet

MIN_BASELINE = 3  # executions of an op outside reads needed to know its usual duration


def busy_added(devices: list[DeviceTimeline], programs: ProgramExecutions, reads: EventSet) -> np.ndarray:
    added = np.zeros(len(reads))
    if not len(reads):
        return added
    for index, device in enumerate(devices):
        rows = device_ops(device, programs, index)[0]
        if not rows.size:
            continue
        ev = device.plane.events
        start, dur, name = ev.start_us[rows], ev.dur_us[rows], ev.name[rows]
        read = np.searchsorted(reads.start, start + dur, side="left") - 1
        during = read >= 0
        during[during] = reads.end[read[during]] > start[during]
        usual = _median_by_name(name[~during], dur[~during], len(device.plane.names))
        excess = np.clip(dur[during] - usual[name[during]], 0, None)  # nan (no baseline) compares as no excess
        np.add.at(added, read[during], np.nan_to_num(excess))
    return added


def _median_by_name(name: np.ndarray, dur: np.ndarray, names: int) -> np.ndarray:
    """Per name index, the median duration of its executions; nan with fewer than ``MIN_BASELINE``."""
    median = np.full(names, np.nan)
    if not name.size:
        return median
    order = np.lexsort((dur, name))
    name, dur = name[order], dur[order]
    first = np.flatnonzero(np.r_[True, name[1:] != name[:-1]])
    count = np.diff(np.r_[first, name.size])
    enough = count >= MIN_BASELINE
    first, count = first[enough], count[enough]
    lower, upper = first + (count - 1) // 2, first + count // 2
    median[name[first]] = (dur[lower] + dur[upper]) / 2
    return median
