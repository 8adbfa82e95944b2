"""The truth table of a workload in the analysis' own terms, and an analysis scored against it.

``Truth.of(capture, lines)`` takes the runner's two records. The model each figure rests on:
- **Idle by cause**, from the captured steps' counters and clocks alone (``StepRecorder``), over the
  steps' wall time W (the window both sides are compared in: from the first step's start to the last
  one's end). Compile is torch_xla's CompileTime (C); a read its TransferFromDeviceTime (R). The host
  works for the step while the main thread is on a CPU or waiting for one (P: its CPU time and its
  run-queue wait) or torch's own threads it waits for are (the autograd engine's, A): tracing. What
  is left, W - C - R - P - A, is the main thread off the CPUs: blocked. Where C + R + P + A exceed W
  (a compile's own CPU time counted twice), blocked is 0 and tracing the rest. The device's busy time
  (ExecuteTime, X) overlaps the reads first (a read waits for the graph it needs), then the blocked
  time (a thread off the CPUs while the device computes mostly waits for it: a sync's barrier), then
  tracing; what does not overlap is idle. Shares are of the idle time so modelled.
- **A read's cost, where an A/B arm exists** (``Case.without_reads``: the same workload, its reads
  taken out and the rest kept; the capture record's ``ab`` blocks): the metrics see a read's transfer, not
  the overlap it takes away (the host tracing the next step while the device waits, where without
  the read the device would still be running the last one). What removing the reads saves is the
  truth there: the median over neighbouring pairs of blocks (each the window's steps again) of the
  device's idle time (wall less ExecuteTime) with the reads less without, over the median idle
  time of the blocks with reads, is the reads' share of idle (``ab_read_share``: a share, as the
  blocks run after the window, their idle time not the window's); the model's other causes give
  up (or take back) the difference, tracing first (the lost overlap is time the host spent
  tracing), then blocked. A measurement has its error: ``Truth.uncertainty_points`` is the half
  width of the share's 95% bootstrap interval over the pairs, in points (0 without an arm).
- **Reads and compiles by line**: ``LineTracer``'s counts per triggering line (the innermost line of
  the user's or a library's file executing when the counter moved), from the same steps run apart.
``score(analysis, truth)`` -> ``Score``: per cause the analysis' share of the idle time inside the
truth's window minus the truth's, in points (transfer_to_device counted as tracing; unattributed
against every cause); the share of reads and of compiles the report places at their triggering line
(matched by count per line); findings placed at a ``def``/``class`` line or in xlaprof's own code.
"""
from __future__ import annotations

import linecache
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tests.support.workloads.ab_harness import MIN_QUIET_PAIRS, NO_READS_ARM, READS_ARM, quiet

CAUSES = ("compile", "transfer_from_device", "host_tracing", "host_blocked")


@dataclass
class Truth:
    idle_us: dict[str, float]
    reads: Counter
    compiles: Counter
    fallbacks: Counter
    steps: list[dict] = field(default_factory=list)
    uncertainty_points: float = 0.0  # the A/B read share's 95% interval half width, in points of idle

    @property
    def idle_share(self) -> dict[str, float]:
        total = sum(self.idle_us.values()) or 1.0
        return {cause: self.idle_us[cause] / total for cause in CAUSES}

    @staticmethod
    def of(capture: dict, lines: dict) -> Truth:
        steps = capture["steps"]
        total = lambda key: sum(s["metrics"].get(key, 0.0) for s in steps)  # noqa: E731
        wall = sum(s["wall_us"] for s in steps)
        working = sum(s["cpu_us"] + s.get("runnable_us", 0.0) + s.get("runtime_cpu_us", 0.0) for s in steps)
        compile_us, read_us, busy = total("compile_us"), total("read_us"), total("execute_us")
        blocked = max(0.0, wall - compile_us - read_us - working)
        tracing = max(0.0, wall - compile_us - read_us - blocked)
        busy_in_reads = min(busy, read_us)
        busy_in_blocked = min(busy - busy_in_reads, blocked)
        busy_in_tracing = min(busy - busy_in_reads - busy_in_blocked, tracing)
        idle = {"compile": compile_us, "transfer_from_device": read_us - busy_in_reads,
                "host_tracing": tracing - busy_in_tracing, "host_blocked": blocked - busy_in_blocked}
        uncertainty = 0.0
        if ab := capture.get("ab"):
            share, uncertainty = ab_read_share(ab)
            _take_read_idle(idle, share * sum(idle.values()))
        return Truth(idle, Counter(lines["reads"]), Counter(lines["compiles"]), Counter(lines["fallbacks"]), steps,
                     100 * uncertainty)

    @property
    def window_ns(self) -> tuple[int, int]:
        """The steps' span on the profiler's clock (ns since the Unix epoch)."""
        first, last = self.steps[0], self.steps[-1]
        return int(first["start"] * 1e9), int(last["start"] * 1e9 + last["wall_us"] * 1e3)


AB_RESAMPLES = 2000


def ab_read_share(ab: dict) -> tuple[float, float]:
    """The share of the device's idle time that taking the reads out saves (see the module's model),
    and the half width of its 95% bootstrap interval over the pairs of blocks: the pairs whose pinned
    cores no other load took (``ab_harness.quiet``), all of them where fewer than
    ``ab_harness.MIN_QUIET_PAIRS`` were."""
    def idle(block: dict) -> float:
        return block["wall_us"] - block["metrics"].get("execute_us", 0.0)
    every = list(zip(ab[READS_ARM], ab[NO_READS_ARM]))
    measured = [(w, o) for w, o in every if quiet(w.get("foreign", 0.0), o.get("foreign", 0.0))]
    pairs = np.array([(idle(w), idle(o)) for w, o in (measured if len(measured) >= MIN_QUIET_PAIRS else every)])

    def share(rows: np.ndarray) -> np.ndarray:  # rows: (..., pairs, 2)
        saving = np.median(rows[..., 0] - rows[..., 1], axis=-1)
        return np.clip(saving / np.median(rows[..., 0], axis=-1), 0.0, 1.0)
    picks = np.random.default_rng(0).integers(0, len(pairs), (AB_RESAMPLES, len(pairs)))
    low, high = np.percentile(share(pairs[picks]), [2.5, 97.5])
    return float(share(pairs)), float(high - low) / 2


def _take_read_idle(idle: dict[str, float], read_us: float) -> None:
    """Makes reads ``read_us`` of the idle time, the difference given up by tracing, then blocked."""
    excess = read_us - idle["transfer_from_device"]
    idle["transfer_from_device"] += excess
    for cause in ("host_tracing", "host_blocked"):
        moved = min(excess, idle[cause])  # a negative excess goes back to tracing whole
        idle[cause] -= moved
        excess -= moved


@dataclass
class Score:
    cause_points: dict[str, float]  # report share - truth share, in points of idle
    reads_at_line: float  # share of the truth's reads the report places at their line (1.0 where none)
    compiles_at_line: float
    misplaced: list[str]  # findings at a def/class line or in xlaprof's own code
    report_share: dict[str, float]
    truth_share: dict[str, float]
    read_counts: tuple[int, int]  # (report, truth)
    compile_counts: tuple[int, int]

    @property
    def worst_cause_points(self) -> float:
        return max(abs(v) for v in self.cause_points.values())


def analysis_share(analysis, window_ns: tuple[int, int]) -> dict[str, float]:
    """The analysis' share of idle by cause inside ``window_ns`` (its gap pieces clipped to it)."""
    from xlaprof.analysis.idle.attribution import CAUSES as CODES

    idle = dict.fromkeys(c.value for c in CODES)
    idle = {cause: 0.0 for cause in idle}
    for worker in analysis.analysed:
        pieces, origin_us = worker.pieces, worker.worker.space.origin_ns / 1e3
        lo, hi = window_ns[0] / 1e3 - origin_us, window_ns[1] / 1e3 - origin_us
        clipped = (pieces.start_us + pieces.dur_us).clip(lo, hi) - pieces.start_us.clip(lo, hi)
        for code, cause in enumerate(CODES):
            idle[cause.value] += float(clipped[pieces.cause == code].sum())
    total = sum(idle.values()) or 1.0
    share = {cause: idle[cause] / total for cause in CAUSES}
    share["host_tracing"] += idle["transfer_to_device"] / total
    return share


def at_line(placed: Counter, truth: Counter) -> float:
    wanted = sum(truth.values())
    if not wanted:
        return 1.0
    return sum(min(placed.get(line, 0), count) for line, count in truth.items()) / wanted


def misplaced_findings(report: dict) -> list[str]:
    bad = []
    for finding in report["findings"]:
        for source in [finding.get("source")] + [s.get("source") for s in finding.get("inside", [])]:
            if not source:
                continue
            path, _, number = source.rpartition(":")
            text = linecache.getline(path, int(number)).strip() if number.isdigit() else ""
            own = "/xlaprof/" in path or "/collectors/" in path and not path.endswith("demo_worker.py")
            if own or text.startswith(("def ", "class ", "async def ")):
                bad.append(f"{finding['kind']} at {source}: {text}")
    return bad


def score(analysis, report: dict, truth: Truth) -> Score:
    mine = analysis_share(analysis, truth.window_ns)
    reads = Counter({k: int(v) for k, v in report["transfers_from_device"]["by_source"].items()})
    compiles = Counter(e["source"] for e in report["compile_events"] if e.get("source"))
    return Score({c: 100 * (mine[c] - truth.idle_share[c]) for c in CAUSES},
                 at_line(reads, truth.reads), at_line(compiles, truth.compiles), misplaced_findings(report),
                 mine, truth.idle_share, (report["transfers_from_device"]["count"], int(sum(truth.reads.values()))),
                 (report["compiles"]["count"], int(sum(truth.compiles.values()))))
