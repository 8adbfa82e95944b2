"""The A/B truth of a read's cost, from one capture of a workload run with ``ab_harness``'s
``--alternate-reads`` (and ``--pin-cores``).

Contract: ``arm_runs(analysis)`` is two dicts, the runs other loads left alone and those they
disturbed (a ``DISTURBED`` span inside), each holding per arm (``ab_harness.READS_ARM``,
``NO_READS_ARM``) one ``(start_us, wall_us, idle_us, charged_us, added_us)`` per sampling run whose
span lies whole inside the capture window, in time order: the run's wall time (its span: steps, and the device
work, drained at its end), the device's idle time inside it (wall minus busy: the device timeline
alone), the idle time the analysis charged to ``transfer_from_device`` inside it, and the device
time it found the run's reads added to the work running during them (``read_slowdown``).
``ab_figures(analysis, steps_per_run)`` is the case's figures per step: per arm the run count and
the median run wall time; ``saving_us``, the median over neighbouring pairs of runs (one with
reads, the next without, so both saw about the same load) of the difference of their wall times:
the truth, what removing the reads saves; ``idle_saving_us``, the same for the device's idle time
(the saving without what the arms' device work differs by); ``saving_interval_us`` and
``idle_saving_interval_us``, the half widths of their 95% bootstrap intervals over the pairs (how
precise the truth is); ``charged_us``, the median idle charge
of a run with reads, and ``cost_us``, the median of that charge plus the device time added: the
analysis' claims, over the runs with reads that the pairs hold (a capture's runs can change regime
midway, the closure case's saving 6 ms a step in its first runs and 3 ms after, the claim following
it run by run: medians over different runs compared one regime's claim with the other's saving); ``pairs``, the number of pairs; ``disturbed``, the runs other loads disturbed,
left out unless fewer than ``ab_harness.MIN_QUIET_PAIRS`` pairs would be left (then every run
counts).
``AB_CASES``: the cases of the truth, each (workload module, its arguments, steps per sampling run),
run with ``AB_OPTIONS``.
"""
from __future__ import annotations

import numpy as np

from tests.support import bootstrap
from tests.support.workloads import denoise_worker
from tests.support.workloads.ab_harness import DISTURBED, MIN_QUIET_PAIRS, NO_READS_ARM, READS_ARM
from xlaprof.analysis.common import intervals
from xlaprof.analysis.idle.attribution import CODE, Cause
from xlaprof.analysis.idle.read_slowdown import busy_added

AB_OPTIONS = ["--pin-cores", "--alternate-reads"]
DIFFUSERS_STEPS_PER_RUN = 2  # a lookup (its two reads) every 2 steps: twice the share of a 4-step run's
AB_CASES = {
    # denoise loop, tiny_scheduler's .nonzero().item() every step
    "helper": ("tests.support.workloads.denoise_worker", ["--spans", "xp"], denoise_worker.STEPS_PER_RUN),
    # a read in xm.add_step_closure every step
    "closure": ("tests.support.workloads.denoise_worker",
                ["--spans", "xp", "--no-scheduler-reads", "--closure-every", "1"], denoise_worker.STEPS_PER_RUN),
    # DPM-Solver's index lookup on the device vs set_begin_index(0) with the lookup's other tensor work
    "diffusers": ("tests.support.workloads.diffusers_worker", ["--steps-per-run", str(DIFFUSERS_STEPS_PER_RUN)],
                  DIFFUSERS_STEPS_PER_RUN),
}


def arm_runs(analysis) -> tuple[dict[str, list[tuple]], dict[str, list[tuple]]]:
    (worker,) = analysis.workers
    spans, pieces, devices = worker.host.spans, worker.pieces, worker.devices
    w0, w1 = worker.window
    read = pieces.cause == CODE[Cause.TRANSFER_FROM_DEVICE]
    p0, p1 = pieces.start_us[read], pieces.start_us[read] + pieces.dur_us[read]
    reads = worker.host.transfers_from_device
    added = busy_added(devices, worker.programs, reads)
    marks = np.array([float(spans.start[i]) for i, name in enumerate(spans.name) if name == DISTURBED])
    quiet: dict[str, list[tuple]] = {READS_ARM: [], NO_READS_ARM: []}
    disturbed: dict[str, list[tuple]] = {READS_ARM: [], NO_READS_ARM: []}
    for i, name in enumerate(spans.name):
        start, end = float(spans.start[i]), float(spans.end[i])
        if name in quiet and w0 <= start and end <= w1:
            charged = float(np.clip(np.minimum(p1, end) - np.maximum(p0, start), 0, None).sum())
            busy = sum(intervals.total(*intervals.clip(d.busy_starts, d.busy_ends, start, end)) for d in devices)
            mine = float(added[(reads.start >= start) & (reads.start < end)].sum())
            runs = disturbed if ((marks >= start) & (marks <= end)).any() else quiet
            runs[name].append((start, end - start, len(devices) * (end - start) - busy, charged, mine))
    return ({arm: sorted(rs) for arm, rs in quiet.items()}, {arm: sorted(rs) for arm, rs in disturbed.items()})


def _pairs(runs: dict) -> list[tuple[tuple, tuple]]:
    """Runs alternate: each run with reads pairs with the next run without, which began as it ended."""
    return [(w, o) for w in runs[READS_ARM] for o in runs[NO_READS_ARM] if abs(o[0] - (w[0] + w[1])) < 0.5 * w[1]]


def ab_figures(analysis, steps_per_run: int) -> dict:
    runs, disturbed = arm_runs(analysis)
    pairs = _pairs(runs)
    if len(pairs) < MIN_QUIET_PAIRS:  # no quiet stretch: measure the disturbed runs as well
        runs = {arm: sorted(runs[arm] + disturbed[arm]) for arm in runs}
        pairs = _pairs(runs)
    wall = {arm: float(np.median([r[1] for r in rs])) / steps_per_run if rs else float("nan")
            for arm, rs in runs.items()}
    with_reads = [w for w, _ in pairs]  # the claim from the runs the truth compares (see the contract)

    def per_step(values: list[float]) -> float:
        return float(np.median(values)) / steps_per_run if values else float("nan")

    def interval(values: list[float]) -> float:  # the median's 95% interval half width, per step
        return bootstrap.half_width(np.array(values), lambda rows: np.median(rows, axis=-1)) / steps_per_run
    savings, idle_savings = [w[1] - o[1] for w, o in pairs], [w[2] - o[2] for w, o in pairs]
    return {"runs": {arm: len(rs) for arm, rs in runs.items()}, "pairs": len(pairs), "wall_us": wall,
            "disturbed": sum(len(rs) for rs in disturbed.values()),
            "saving_us": per_step(savings), "saving_interval_us": interval(savings),
            "idle_saving_us": per_step(idle_savings), "idle_saving_interval_us": interval(idle_savings),
            "charged_us": per_step([r[3] for r in with_reads]),
            "cost_us": per_step([r[3] + r[4] for r in with_reads])}
