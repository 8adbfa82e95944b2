"""The truth table of a workload in the analysis' own terms, and an analysis scored against it.

``Truth.of(capture, lines)`` takes the runner's two records. The model each figure rests on:
- **Idle by cause**, from the counters and clocks of the rows modelled alone (``StepRecorder``'s
  steps: the window's, or for a case with an A/B arm, its blocks with reads, each the window's steps
  again), over their wall time W (each row's span is where both sides are compared). Compile is
  torch_xla's CompileTime and TorchDynamo's own time compiling frames into graphs (C: the latter is
  the main thread's CPU work, taken out of P below); a read its TransferFromDeviceTime (R). The host
  works for the step while the main thread is on a CPU or waiting for one (P: its CPU time and its
  run-queue wait) or torch's own threads it waits for are (the autograd engine's, A), or while
  xlaprof's stack sampler holds the GIL to read its stack (S: it waits for the GIL there, where it
  would run Python; the capture's cost on the host's work): tracing. What is left,
  W - C - R - P - A - S, is the main thread off the CPUs: blocked. Where C + R + P + A + S exceed W
  (a compile's own CPU time counted twice), blocked is 0 and tracing the rest. The device's busy time
  (ExecuteTime, X) overlaps the reads first (a read waits for the graph it needs), then the blocked
  time (a thread off the CPUs while the device computes mostly waits for it: a sync's barrier), then
  tracing; what does not overlap is idle. Shares are of the idle time so modelled.
- **A read's cost, where an A/B arm exists** (``Case.without_reads``: the same workload, its reads
  taken out and the rest kept; the capture record's ``ab`` blocks, run under a capture of their own,
  ``ab_session``): the metrics see a read's transfer, not
  the overlap it takes away (the host tracing the next step while the device waits, where without
  the read the device would still be running the last one). What removing the reads saves is the
  truth there: the median over neighbouring pairs of blocks of the
  device's idle time (wall less ExecuteTime) with the reads less without, over the median idle
  time of the blocks with reads, is the reads' share of idle (``ab_read_share``); the model's other
  causes give up (or take back) the difference, tracing first (the lost overlap is time the host spent
  tracing), then blocked. The rows modelled, and the analysis scored, are then the blocks with reads
  of the pairs counted (``counted_pairs``), in that capture: the blocks run after the window, and the
  same steps ran there up to a third slower a step than in the window, so a share measured in them
  is not the window's. A measurement has its error: ``Truth.uncertainty_points`` is the half
  width of the share's 95% bootstrap interval over the pairs, in points (0 without an arm).
  **The saving has two parts**: the reads' own time and its overlap, and the host's other work
  running faster without the reads. The second is measured too (``host_slowdown_share``: the
  host's time outside the reading calls, in a block with reads less in its pair's block without,
  the same median over pairs, at most the main thread's extra CPU and run-queue time): 0-8 points
  on a quiet machine, 8 with the device's programs compiled without optimizations, 21 on a machine
  running 40% slower than usual, where the host's work ran a fifth slower in the blocks that slept
  in reads than in those that did not. One capture of the arm with reads cannot show that slowdown
  (no baseline runs the same work without the reads), so the truth's read share is the range from
  the saving less that part to the whole saving, and the analysis is scored against the nearest
  point of it.
- **The device time a read's partial graph costs again** (``rerun_against_arm``): the device time
  (the program runs on the A/B capture's device timeline) a block without reads saved over its pair
  with reads (the median over the pairs counted, and its 95% bootstrap interval's half width: one
  fresh clone's run saved 61 ms +/- 29), against the analysis' ``read_reruns`` of the reads
  inside the block with reads (the median likewise): the reads' early graphs whose work the step's
  graph ran again are what the device no longer runs without them. Not ExecuteTime: it also counts
  each run's launch around the device's work (0.24 ms a run on the CPU device on a slow machine,
  where the device's own work was 1.3 ms), which the extra run a read forces adds as a gap between
  runs, idle time the analysis charges to the read, not work run again. Over five runs of
  fallback_backward the prediction was 0.68-0.97 of the ExecuteTime saved (one run of the suite
  failed its bound there) and 0.91-1.29 of the device time saved.
- **Reads and compiles by line**: ``LineTracer``'s counts per triggering line (the innermost line of
  the user's or a library's file executing when the counter moved), from the same steps run apart.
``score(report, truth, scored)`` -> ``Score``: per cause the analysis' (``scored``: of the truth's
``session``) share of the idle time inside the truth's rows minus the truth's (its read share, where a
range, at the point nearest the analysis'), in points
(transfer_to_device counted as tracing; unattributed against every cause); the share of reads and of compiles the report places at their triggering line
(matched by count per line); findings placed at a ``def``/``class``/decorator line or in xlaprof's own code.
"""
from __future__ import annotations

import linecache
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tests.support import bootstrap
from tests.support.workloads.ab_harness import MIN_QUIET_PAIRS, NO_READS_ARM, READS_ARM, quiet

CAUSES = ("compile", "transfer_from_device", "host_tracing", "host_blocked")
# How a def, class or decorator line begins: no finding names one, and a frame standing at one as its
# first line runs none of its body (``LineTracer``).
HEADERS = ("def ", "async def ", "class ", "@")


@dataclass
class Truth:
    idle_us: dict[str, float]
    reads: Counter
    compiles: Counter
    fallbacks: Counter
    rows: list[dict] = field(default_factory=list)  # modelled: the window's steps, or the A/B blocks with reads
    pairs: list[tuple[dict, dict]] = field(default_factory=list)  # the A/B blocks counted: (with, without) reads
    uncertainty_points: float = 0.0  # the A/B read share's 95% interval half width, in points of idle
    session: str = ""  # the capture the rows ran in: the analysis' shares are scored there

    @property
    def idle_share(self) -> dict[str, float]:
        total = sum(self.idle_us.values()) or 1.0
        return {cause: self.idle_us[cause] / total for cause in CAUSES}

    @staticmethod
    def of(capture: dict, lines: dict) -> Truth:
        ab = capture.get("ab")
        pairs = counted_pairs(ab) if ab else []
        rows = [w for w, _ in pairs] if ab else capture["steps"]
        total = lambda key: sum(r["metrics"].get(key, 0.0) for r in rows)  # noqa: E731
        wall = sum(r["wall_us"] for r in rows)
        working = sum(r["cpu_us"] + r.get("runnable_us", 0.0) + r.get("runtime_cpu_us", 0.0)
                      + r.get("sampler_gil_us", 0.0) for r in rows)
        dynamo = total("dynamo_compile_us")  # the main thread's own CPU work: out of P, into compile
        compile_us, read_us, busy = total("compile_us") + dynamo, total("read_us"), total("execute_us")
        working = max(0.0, working - dynamo)
        blocked = max(0.0, wall - compile_us - read_us - working)
        tracing = max(0.0, wall - compile_us - read_us - blocked)
        busy_in_reads = min(busy, read_us)
        busy_in_blocked = min(busy - busy_in_reads, blocked)
        busy_in_tracing = min(busy - busy_in_reads - busy_in_blocked, tracing)
        idle = {"compile": compile_us, "transfer_from_device": read_us - busy_in_reads,
                "host_tracing": tracing - busy_in_tracing, "host_blocked": blocked - busy_in_blocked}
        uncertainty = 0.0
        if ab:
            share, uncertainty = ab_read_share(ab)
            _take_read_idle(idle, share * sum(idle.values()))
        return Truth(idle, Counter(lines["reads"]), Counter(lines["compiles"]), Counter(lines["fallbacks"]), rows,
                     pairs, 100 * uncertainty, capture["ab_session"] if ab else capture["session"])

    @property
    def windows_ns(self) -> list[tuple[int, int]]:
        """Each modelled row's span on the profiler's clock (ns since the Unix epoch)."""
        return [_window_ns(r) for r in self.rows]


def _window_ns(row: dict) -> tuple[int, int]:
    """A recorded row's (step's or block's) span on the profiler's clock (ns since the Unix epoch)."""
    return int(row["start"] * 1e9), int(row["start"] * 1e9 + row["wall_us"] * 1e3)


def counted_pairs(ab: dict) -> list[tuple[dict, dict]]:
    """The (with reads, without) pairs of blocks a measurement counts: those whose pinned cores no
    other load took (``ab_harness.quiet``), all of them where fewer than ``ab_harness.MIN_QUIET_PAIRS`` were."""
    every = list(zip(ab[READS_ARM], ab[NO_READS_ARM]))
    measured = [(w, o) for w, o in every if quiet(w.get("foreign", 0.0), o.get("foreign", 0.0))]
    return measured if len(measured) >= MIN_QUIET_PAIRS else every


def ab_read_share(ab: dict) -> tuple[float, float]:
    """The share of the device's idle time that taking the reads out saves (see the module's model),
    and the half width of its 95% bootstrap interval over the pairs of blocks counted (``counted_pairs``)."""
    pairs = np.array([(_device_idle(w), _device_idle(o)) for w, o in counted_pairs(ab)])

    def share(rows: np.ndarray) -> np.ndarray:  # rows: (..., pairs, 2)
        saving = np.median(rows[..., 0] - rows[..., 1], axis=-1)
        return np.clip(saving / np.median(rows[..., 0], axis=-1), 0.0, 1.0)
    return float(share(pairs)), bootstrap.half_width(pairs, share)


def _device_idle(block: dict) -> float:
    return block["wall_us"] - block["metrics"].get("execute_us", 0.0)


def host_slowdown_share(scored, pairs: list[tuple[dict, dict]]) -> float:
    """The part of the A/B read share that is the host's work outside the reading calls (the read
    marks of ``scored``'s capture) taking longer in the blocks with reads than in their pairs
    without: the median over pairs of that difference over the median idle time of the blocks with
    reads, as ``ab_read_share``; 0 where the host ran no slower with the reads. Capped by the same
    figure from the main thread's CPU and run-queue time, which includes the reads' own CPU work but
    no read mark: marks too short cannot make the range wider than the host's clocks allow."""
    marks = [(worker, *_read_marks(worker)) for worker in scored.analysed]

    def outside_reads(block: dict) -> float:
        window = _window_ns(block)
        return block["wall_us"] - sum(_inside_us(starts, ends, *_on_clock(window, worker)).sum()
                                      for worker, starts, ends in marks)

    def working(block: dict) -> float:
        return block["cpu_us"] + block.get("runnable_us", 0.0)
    idle = np.median([_device_idle(w) for w, _ in pairs])
    marked = np.median([outside_reads(w) - outside_reads(o) for w, o in pairs])
    clocked = np.median([working(w) - working(o) for w, o in pairs])
    return max(0.0, float(min(marked, clocked) / idle))


def rerun_against_arm(scored, pairs: list[tuple[dict, dict]]) -> tuple[float, float, float, float]:
    """(the analysis' ``read_reruns`` of the reads in a block with reads, the device time its pair's block
    without reads saved over it, its device time), in microseconds, each the median over ``pairs``, and
    the half width of the saving's 95% bootstrap interval over them; a block's device time is its
    program runs' in the A/B capture (``scored``)."""
    from xlaprof.analysis.idle.read_reruns import read_reruns

    per_pair = []
    for worker in scored.analysed:
        reads, programs = worker.host.transfers_from_device, worker.programs
        rerun = read_reruns(programs, worker.hlo, reads, len(worker.devices)).sum(axis=0)

        def inside(block: dict, starts: np.ndarray) -> np.ndarray:
            lo, hi = _on_clock(_window_ns(block), worker)
            return (starts >= lo) & (starts < hi)

        def device_us(block: dict) -> float:
            return float(programs.dur_us[inside(block, programs.start_us)].sum())

        for block, without in pairs:
            with_reads = device_us(block)
            rerun_us = float(rerun[inside(block, reads.start)].sum())
            per_pair.append((rerun_us, with_reads - device_us(without), with_reads))
    rows = np.asarray(per_pair)
    predicted, saved, executed = np.median(rows, axis=0)
    error = bootstrap.half_width(rows[:, 1], lambda savings: np.median(savings, axis=-1))
    return float(predicted), float(saved), float(executed), error


def _read_marks(worker) -> tuple[np.ndarray, np.ndarray]:
    from xlaprof.analysis.common import intervals

    reads = worker.host.transfers_from_device
    return intervals.merge(reads.start, reads.end)


def _on_clock(window_ns: tuple[int, int], worker) -> tuple[float, float]:
    """A window on the profiler's clock (ns since the Unix epoch) on ``worker``'s (us)."""
    origin_us = worker.worker.space.origin_ns / 1e3
    return window_ns[0] / 1e3 - origin_us, window_ns[1] / 1e3 - origin_us


def _inside_us(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Each interval's microseconds inside [lo, hi]."""
    return ends.clip(lo, hi) - starts.clip(lo, hi)


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
    misplaced: list[str]  # findings at a def, class or decorator line or in xlaprof's own code
    report_share: dict[str, float]
    truth_share: dict[str, float]
    read_counts: tuple[int, int]  # (report, truth)
    compile_counts: tuple[int, int]
    host_slowdown_points: float = 0.0  # of the A/B read share, the host's other work slower with the reads

    @property
    def worst_cause_points(self) -> float:
        return max(abs(v) for v in self.cause_points.values())


def analysis_share(analysis, windows_ns: list[tuple[int, int]]) -> dict[str, float]:
    """The analysis' share of idle by cause inside ``windows_ns`` (its gap pieces clipped to each)."""
    from xlaprof.analysis.idle.attribution import CAUSES as CODES

    sums = np.zeros(len(CODES))
    for worker in analysis.analysed:
        pieces = worker.pieces
        start, end, inside = pieces.start_us, pieces.start_us + pieces.dur_us, np.zeros(len(pieces))
        for window in windows_ns:
            inside += _inside_us(start, end, *_on_clock(window, worker))
        sums += np.bincount(pieces.cause.astype(np.int64), weights=inside, minlength=len(CODES))
    idle = {cause.value: float(sums[code]) for code, cause in enumerate(CODES)}
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
            if own or text.startswith(HEADERS):
                bad.append(f"{finding['kind']} at {source}: {text}")
    return bad


def score(report: dict, truth: Truth, scored) -> Score:
    """``report``: the analysis of the case's window; ``scored``: the analysis of ``truth.session``."""
    mine = analysis_share(scored, truth.windows_ns)
    slowdown = host_slowdown_share(scored, truth.pairs) if truth.pairs else 0.0
    truths = nearest_read_share(truth.idle_share, mine["transfer_from_device"], slowdown)
    reads = Counter({k: int(v) for k, v in report["transfers_from_device"]["by_source"].items()})
    compiles = Counter(e["source"] for e in report["compile_events"] if e.get("source"))
    return Score({c: 100 * (mine[c] - truths[c]) for c in CAUSES},
                 at_line(reads, truth.reads), at_line(compiles, truth.compiles), misplaced_findings(report),
                 mine, truths, (report["transfers_from_device"]["count"], int(sum(truth.reads.values()))),
                 (report["compiles"]["count"], int(sum(truth.compiles.values()))), 100 * slowdown)


def nearest_read_share(share: dict[str, float], analysed: float, slowdown: float) -> dict[str, float]:
    """The truth's shares with its read share at the point of [share - slowdown, share] nearest to
    the analysis' (the rest given to tracing: the host's slower work is tracing in one capture)."""
    reads = share["transfer_from_device"]
    nearest = min(max(analysed, reads - slowdown), reads)
    return dict(share, transfer_from_device=nearest, host_tracing=share["host_tracing"] + reads - nearest)
