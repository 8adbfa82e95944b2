"""A pod at a glance: idle share per worker and step, the straggler of each step, workers that behave alike.

Contract:
- ``pod_grid(analysis)`` builds a ``PodGrid`` once per analysis (cache it), from the workers'
  summaries alone (no capture is read): one row per worker with steps, one column per step every
  such worker ran (``worker_comparison.common_step_rows``; at most ``MAX_COLUMNS``, the first),
  each cell's wall time, device busy time and idle time by cause inside the step (summed over the
  worker's devices), and per step its straggler (``step_stragglers``): the worker whose step took
  longest, where it took more than ``TIE_MARGIN`` longer than the step's median worker (else none:
  -1, and no mark; identical workers never make one a straggler). Rows are ordered by group (``groups``, slowest group first), then by name, numbers in
  names compared as numbers, so workers that behave alike sit together. ``None`` with fewer than two
  workers with steps, or no step they all ran.
- ``heatmap(grid, cause)``: the ``Heatmap`` to draw: ``z[row][col]`` the idle share (percent of
  the device time in that step: idle / (busy + idle)) of every cause (``cause`` None or
  ``ALL_IDLE``) or of one cause of ``attribution.CAUSES`` (an unknown value: all idle), each cell's
  step time in ms and a hover template (not a text per cell: 64 x 500 cells stay small), and the straggler markers (one per step that has one: its worker, and the hover naming it, its wall time
  against the step's median and its main idle cause in that step).
- ``groups``: workers grouped by behaviour, an explained rule rather than a fitted one: the speed
  band of the worker's median step against the typical worker's (the median of the workers'
  medians): ``slow`` above ``STRAGGLER_RATIO`` times it (exactly the analysis' stragglers),
  ``fast`` below it divided by that ratio, else ``typical``; then the idle cause that dominates its
  steps. A ``WorkerGroup`` has its members (``compact_names``: ``tpu-vm-{0-15,17}:8466``), median
  step and mean idle share.
- ``cell(grid, worker, step)``: one clicked cell's ``CellDetail`` (its time range on the session's
  axis, as the timeline's ``worker_offsets``, and its figures); ``None`` for anything that names no
  cell (hostile click data included).
- ``timeline_workers(analysis, grid, requested)``: the workers whose lanes the timeline shows. A
  session of at most ``TIMELINE_WORKERS`` workers: all (None). A pod: the ``requested`` labels
  (newline-separated, as the page holds them) that name its workers, else by default its slowest
  worker (the straggler of the most steps) and a typical one (the first of the largest typical
  group), or the first ``TIMELINE_WORKERS`` without common steps: 64 workers' lanes would be
  thousands of bars and a page taller than a screen.
- ``slowest_summary(grid)``: the workers slowest in the most steps (steps with a straggler), as
  ``(worker, steps)``, most first.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.analysis.pipeline.worker_comparison import (
    MAX_ALIGNED_STEPS,
    STRAGGLER_RATIO,
    common_step_rows,
)
from xlaprof.units import format_duration

MAX_COLUMNS = MAX_ALIGNED_STEPS
TIMELINE_WORKERS = 4
TIE_MARGIN = 0.01  # a step's slowest worker is its straggler only when it took more than this share longer than the median one
ALL_IDLE = "all idle"
BANDS = ("slow", "typical", "fast")  # the order groups are shown in
_NUMBERED = re.compile(r"^(.*?)(\d+)((?::\d+)?)$")  # "tpu-vm-" 17 ":8466"


@dataclass(frozen=True)
class WorkerGroup:
    band: str  # slow, typical or fast
    cause: str  # the idle cause that dominates its members' steps ("none": no idle)
    members: tuple[str, ...]
    median_step_us: float  # the median of its members' median steps
    idle_share: float  # its members' mean idle share in the shown steps, 0..1

    @property
    def title(self) -> str:
        return f"{self.band}, mostly {self.cause}" if self.cause != "none" else f"{self.band}, never idle"


@dataclass
class PodGrid:
    workers: list[str]  # row labels, grouped
    steps: np.ndarray  # column step numbers
    total_steps: int  # steps every worker ran (columns beyond MAX_COLUMNS are not shown)
    wall_us: np.ndarray  # (rows, cols)
    busy_us: np.ndarray  # (rows, cols) device busy time, summed over the worker's devices
    idle_us: np.ndarray  # (rows, cols, len(CAUSES)) idle time by cause code
    start_us: np.ndarray  # (rows, cols) on the session axis (worker clocks shifted by their origin)
    straggler: np.ndarray  # (cols,) row of each step's slowest worker
    groups: list[WorkerGroup]
    typical_step_us: float

    def share(self, cause: str | None = None) -> np.ndarray:
        """Idle share (0..1) of each cell: of every cause, or of one."""
        device = self.busy_us + self.idle_us.sum(axis=2)
        codes = [c.value for c in CAUSES]
        idle = self.idle_us[:, :, codes.index(cause)] if cause in codes else self.idle_us.sum(axis=2)
        return np.divide(idle, device, out=np.zeros_like(idle), where=device > 0)


@dataclass
class Heatmap:
    x: list[int]  # step numbers
    y: list[str]  # workers
    z: list[list[float]]  # idle share in percent
    wall_ms: list[list[float]]  # each cell's step time, for its hover
    hover: str  # the cells' hover template (Plotly's: %{y} the worker, %{x} the step, ...)
    title: str  # "all idle" or the cause
    straggler_x: list[int]
    straggler_y: list[str]
    straggler_hover: list[str]


@dataclass(frozen=True)
class CellDetail:
    worker: str
    step: int
    x0_us: float  # the step on the session axis
    x1_us: float
    wall_us: float
    busy_us: float
    idle_by_cause_us: dict[str, float]  # causes with idle time only, most first
    slowest: bool  # the step's straggler
    vs_median: float  # its wall time over the step's median worker's


def pod_grid(analysis: SessionAnalysis) -> PodGrid | None:
    workers = [w for w in analysis.summaries if len(w.steps)]
    if len(workers) < 2:
        return None
    common, rows = common_step_rows(workers)
    total = int(common.size)
    if total == 0:
        return None
    common, rows = common[:MAX_COLUMNS], [r[:MAX_COLUMNS] for r in rows]
    first = min(w.origin_ns for w in analysis.summaries)  # the session axis' zero, as the timeline's
    wall = np.stack([w.steps.wall_us[r] for w, r in zip(workers, rows)])
    busy = np.stack([w.steps.busy_us[r] for w, r in zip(workers, rows)])
    idle = np.stack([w.steps.idle_us[r] for w, r in zip(workers, rows)])
    start = np.stack([w.steps.start_us[r] + (w.origin_ns - first) / 1e3 for w, r in zip(workers, rows)])
    labels = [w.worker.label for w in workers]
    medians = np.array([float(np.median(w.steps.wall_us)) for w in workers])
    typical = float(np.median(medians))
    share = _shares(busy, idle)
    groups, order = _groups(labels, medians, idle.sum(axis=1), share, typical)
    wall, busy, idle, start = wall[order], busy[order], idle[order], start[order]
    return PodGrid([labels[i] for i in order], common, total, wall, busy, idle, start,
                   step_stragglers(wall), groups, typical)


def step_stragglers(wall: np.ndarray) -> np.ndarray:
    """Per step (column of ``wall``, workers x steps), the row of the worker whose step took longest,
    or -1 where it took no more than ``TIE_MARGIN`` longer than the step's median worker: workers
    that ran alike have no straggler, whichever came first."""
    slowest = wall.argmax(axis=0)
    longest, median = wall.max(axis=0), np.median(wall, axis=0)
    return np.where(longest > median * (1 + TIE_MARGIN), slowest, -1)


def _shares(busy: np.ndarray, idle: np.ndarray) -> np.ndarray:
    """Per worker, its idle share over the shown steps."""
    spent = busy.sum(axis=1) + idle.sum(axis=(1, 2))
    return np.divide(idle.sum(axis=(1, 2)), spent, out=np.zeros(spent.shape), where=spent > 0)


def _band(median: float, typical: float) -> str:
    if typical > 0 and median > STRAGGLER_RATIO * typical:
        return "slow"
    return "fast" if typical > 0 and median * STRAGGLER_RATIO < typical else "typical"


def _groups(labels: list[str], medians: np.ndarray, idle_by_cause: np.ndarray, share: np.ndarray,
            typical: float) -> tuple[list[WorkerGroup], list[int]]:
    """The groups, slowest band first then largest, and the worker rows in group order."""
    keys = {}
    for i, label in enumerate(labels):
        cause = CAUSES[int(idle_by_cause[i].argmax())].value if idle_by_cause[i].max() > 0 else "none"
        keys.setdefault((_band(float(medians[i]), typical), cause), []).append(i)
    ordered = sorted(keys.items(), key=lambda kv: (BANDS.index(kv[0][0]), -len(kv[1]), -np.median(medians[kv[1]])))
    groups, order = [], []
    for (band, cause), rows in ordered:
        rows = sorted(rows, key=lambda i: _natural(labels[i]))
        order += rows
        groups.append(WorkerGroup(band, cause, tuple(labels[i] for i in rows), float(np.median(medians[rows])),
                                  float(np.mean(share[rows]))))
    return groups, order


def _natural(label: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)]


def compact_names(labels: tuple[str, ...] | list[str]) -> str:
    """Labels that differ in one number as ranges: ``tpu-vm-{0-3,7}:8466``; others as they are."""
    families: dict[tuple[str, str], list[int]] = {}
    loose = []
    for label in labels:
        m = _NUMBERED.match(label)
        if m and not (len(m.group(2)) > 1 and m.group(2).startswith("0")):
            families.setdefault((m.group(1), m.group(3)), []).append(int(m.group(2)))
        else:
            loose.append(label)
    out = []
    for (head, tail), numbers in families.items():
        numbers = sorted(set(numbers))
        if len(numbers) == 1:
            out.append(f"{head}{numbers[0]}{tail}")
        else:
            out.append(f"{head}{{{_ranges(numbers)}}}{tail}")
    return ", ".join(out + loose)


def _ranges(numbers: list[int]) -> str:
    runs, begin = [], numbers[0]
    for prev, cur in zip(numbers, numbers[1:] + [None]):
        if cur is None or cur != prev + 1:
            runs.append(f"{begin}" if begin == prev else f"{begin}-{prev}")
            begin = cur
    return ",".join(runs)


def heatmap(grid: PodGrid, cause: str | None = None) -> Heatmap:
    codes = [c.value for c in CAUSES]
    cause = cause if cause in codes else None
    share = grid.share(cause)
    steps = grid.steps.tolist()
    what = f"{cause} idle" if cause else "idle"
    hover = f"%{{y}}, step %{{x}}: %{{z:.1f}}% {what}; the step took %{{customdata:.3f}} ms<extra></extra>"
    median = np.median(grid.wall_us, axis=0)
    sx, sy, sh = [], [], []
    for c, step in enumerate(steps):
        r = int(grid.straggler[c])
        if r < 0:  # the workers ran alike: no straggler
            continue
        sx.append(step)
        sy.append(grid.workers[r])
        main = grid.idle_us[r, c]
        why = f", mostly {CAUSES[int(main.argmax())].value}" if main.max() > 0 else ""
        ratio = grid.wall_us[r, c] / median[c] if median[c] > 0 else 1.0
        sh.append(f"step {step}: slowest {grid.workers[r]}, {format_duration(grid.wall_us[r, c])} "
                  f"({ratio:.2f}x the median worker's){why}")
    return Heatmap(steps, list(grid.workers), np.round(100 * share, 2).tolist(),
                   np.round(grid.wall_us / 1000.0, 4).tolist(), hover, cause or ALL_IDLE,
                   sx, sy, sh)


def cell(grid: PodGrid, worker: object, step: object) -> CellDetail | None:
    if not isinstance(worker, str) or worker not in grid.workers or isinstance(step, bool):
        return None
    try:
        col = np.flatnonzero(grid.steps == int(step))
    except (TypeError, ValueError, OverflowError):
        return None
    if col.size == 0:
        return None
    r, c = grid.workers.index(worker), int(col[0])
    idle = {CAUSES[k].value: float(v) for k, v in enumerate(grid.idle_us[r, c]) if v > 0}
    median = float(np.median(grid.wall_us[:, c]))
    wall = float(grid.wall_us[r, c])
    return CellDetail(worker, int(grid.steps[c]), float(grid.start_us[r, c]), float(grid.start_us[r, c]) + wall,
                      wall, float(grid.busy_us[r, c]), dict(sorted(idle.items(), key=lambda kv: -kv[1])),
                      int(grid.straggler[c]) == r, wall / median if median > 0 else 1.0)


def slowest_summary(grid: PodGrid) -> list[tuple[str, int]]:
    counts = np.bincount(grid.straggler[grid.straggler >= 0], minlength=len(grid.workers))
    found = [(grid.workers[r], int(counts[r])) for r in np.argsort(-counts, kind="stable") if counts[r]]
    return found


def timeline_workers(analysis: SessionAnalysis, grid: PodGrid | None, requested: object = None) -> list[str] | None:
    labels = [w.worker.label for w in analysis.summaries]
    if len(labels) <= TIMELINE_WORKERS:
        return None
    asked = requested.split("\n") if isinstance(requested, str) else []
    known = list(dict.fromkeys(label for label in asked if label in labels))  # in the order asked
    if known:
        return known
    if grid is None:
        return labels[:TIMELINE_WORKERS]
    typical = next((g for g in sorted(grid.groups, key=lambda g: -len(g.members)) if g.band == "typical"),
                   grid.groups[-1])
    slowest = slowest_summary(grid)[0][0]
    return list(dict.fromkeys([slowest, typical.members[0]]))
