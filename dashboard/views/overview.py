"""The numbers a session page and the sessions list show, read off an analysis; no plotting.

Contract (times in microseconds of device time summed over devices, like the JSON report):
- ``overview(analysis)``: busy/idle totals, idle by cause, compiles (count, time, compiles
  before the window, recompiled spans), blocking reads (count, transfer and blocked time, top spans), ``aten::`` CPU fallbacks.
  It never builds a row per gap (the JSON report does), so it is cheap on any capture.
- ``compile_rows(analysis)``: one row per compile, start on the session axis of ``timeline_view``,
  with its program, its graph named for people (``graphs.graph_names``: ``train_step [B=12]``;
  ``xla``: XLA's name, a detail) and what ``changed`` vs the previous graph of its place
  (``analysis.recompiles``). ``source`` is the compiling Python line (as in every table: the line
  of the sampled stack, else the span's). ``cause`` and ``trigger`` are torch_xla's (its debug
  file); where the capture has none, the cause says in a word what the analysis knows (a new
  graph, whose change is the ``changed`` column's; the first graph of its place; a compile caught
  at the capture's edge) or ``NO_CAUSE``, the trigger is empty, and ``cause_tip`` (the cause
  column's tooltip) says where the text comes from.
- ``verdict(analysis)``: the session's one-sentence answer, the same as the text report's first
  line (``report.verdict.session_verdict``), its times in the cards' format (``format_ms``).
- ``step_series(analysis)``: per step number, busy and idle-by-cause time summed over workers;
  beyond ``max_bars`` steps, the mean step of each run of ``group`` consecutive steps.
- ``worker_rows(analysis)``: one row per worker, to compare workers of one session.
- ``session_row(listed)``: a sessions-list row (date, workers, duration, idle share, median step)
  of a ``summary.logdir_figures`` row, with its error where it could not be analysed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dashboard.views.axis import AXIS_UNIT_US, worker_offsets
from dashboard.views.graphs import graph_names, xla_name
from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.analysis.pipeline.summary import ListedSession, idle_share
from xlaprof.report.json_report import finding_json
from xlaprof.report.verdict import session_verdict
from xlaprof.session import SessionSummary
from xlaprof.units import format_ms

TOP_SPANS = 5
MAX_STEP_BARS = 300  # steps drawn one by one; more are grouped


@dataclass
class Overview:
    busy_us: float
    idle_us: float
    idle_by_cause_us: dict[str, float]
    compiles: int
    compile_us: float
    compiles_before: int | None  # graphs the workers compiled before the window (None: no metrics say)
    recompiled_spans: dict[str, int]  # span -> distinct graphs compiled in it
    reads: int
    read_transfer_us: float
    read_blocked_us: float
    read_top_spans: list[tuple[str, int]]
    fallbacks: dict[str, float]  # aten op -> CPU fallbacks in the window
    workers: int
    devices: int
    window_us: float
    events: int

    @property
    def idle_share(self) -> float:
        return idle_share(self.busy_us, self.idle_us)


def overview(analysis: SessionAnalysis) -> Overview:
    reads, compiles = analysis.reads, analysis.compiles
    return Overview(
        busy_us=analysis.busy_us,
        idle_us=analysis.idle_us,
        idle_by_cause_us=analysis.idle_by_cause,
        compiles=compiles.count,
        compile_us=compiles.total_us,
        compiles_before=analysis.compiles_before_window,
        recompiled_spans=dict(compiles.recompiled_spans),
        reads=reads.count,
        read_transfer_us=reads.total_us,
        read_blocked_us=reads.blocked_us,
        read_top_spans=list(reads.by_span.items())[:TOP_SPANS],
        fallbacks=analysis.fallbacks,
        workers=len(analysis.workers),
        devices=sum(len(w.devices) for w in analysis.workers),
        window_us=analysis.window_us,
        events=analysis.event_count,
    )


def verdict(analysis: SessionAnalysis) -> str:
    return session_verdict({"device_busy_us": analysis.busy_us, "device_idle_us": analysis.idle_us,
                            "idle_by_cause_us": analysis.idle_by_cause,
                            "findings": [finding_json(f) for f in analysis.findings]}, format_ms)


NO_CAUSE = "—"
DEBUG_FILE_TIP = ("torch_xla's own cause needs its debug file: run the worker with PT_XLA_DEBUG_LEVEL=2 "
                  "PT_XLA_DEBUG_FILE=<file> (this capture has none). ")
HASH_SHOWN = 8  # last hex digits of a graph hash that name it


def compile_rows(analysis: SessionAnalysis) -> list[dict]:
    rows, names = [], graph_names(analysis)
    for w, offset in zip(analysis.workers, worker_offsets(analysis)):
        for r in w.compiles:
            cause, tip = _compile_cause(r)
            named = names.get((w.worker.label, r.program_id)) if r.program_id is not None else None
            rows.append({"worker": w.worker.label, "start_ms": round((r.start_us + offset) / AXIS_UNIT_US, 3),
                         "dur_ms": round(r.dur_us / AXIS_UNIT_US, 3), "span": r.span or "",
                         "source": r.source or "", "graph": named or (r.graph_hash or "")[-HASH_SHOWN:] or NO_CAUSE,
                         "xla": xla_name(w.hlo.name(r.program_id), r.program_id, r.graph_hash),
                         "graph_hash": r.graph_hash or "", "cause": cause, "cause_tip": tip, "trigger": r.trigger or "",
                         "program": r.program_id if r.program_id is not None else "", "changed": r.changed or ""})
    return sorted(rows, key=lambda row: row["start_ms"])


def _compile_cause(r) -> tuple[str, str]:
    """A compile's cause and where it comes from: torch_xla's debug file, else the analysis (in a
    word: what changed is the "changed" column's)."""
    if r.cause:
        return r.cause, f"torch_xla's cause (its debug file): {r.cause}"
    if r.changed:
        return "new graph", DEBUG_FILE_TIP + f"Shown: a new graph of its place; what changed: {r.changed}"
    if r.program_id is not None:
        return ("first graph of its place", DEBUG_FILE_TIP + "Shown: no earlier graph of its place in the window "
                                                            "to compare it with.")
    return NO_CAUSE, DEBUG_FILE_TIP + "The capture holds no compiled HLO for this compile to compare."


@dataclass
class StepSeries:
    step: np.ndarray  # int64: the step number (the first step of each group), ascending
    busy_us: np.ndarray  # float64 per step, summed over devices and workers
    idle_us: dict[str, np.ndarray]  # cause -> float64 per step
    group: int = 1  # steps per entry: above max_bars steps, entries are means over consecutive steps


def step_series(analysis: SessionAnalysis, max_bars: int = MAX_STEP_BARS) -> StepSeries:
    tables = [w.steps for w in analysis.workers if len(w.steps)]
    if not tables:
        return StepSeries(np.zeros(0, np.int64), np.zeros(0), {c.value: np.zeros(0) for c in CAUSES})
    numbers = np.concatenate([t.step for t in tables])
    steps, which = np.unique(numbers, return_inverse=True)
    busy = np.bincount(which, weights=np.concatenate([t.busy_us for t in tables]), minlength=steps.size)
    idle = np.concatenate([t.idle_us for t in tables])
    by_cause = {c.value: np.bincount(which, weights=idle[:, k], minlength=steps.size) for k, c in enumerate(CAUSES)}
    group = -(-steps.size // max(max_bars, 1))
    if group == 1:
        return StepSeries(steps, busy, by_cause)
    # Thousands of bars are unreadable and slow to draw: show the mean step of each run of steps.
    first = np.arange(0, steps.size, group)
    counts = np.diff(np.append(first, steps.size))
    mean = lambda v: np.add.reduceat(v, first) / counts  # noqa: E731
    return StepSeries(steps[first], mean(busy), {c: mean(v) for c, v in by_cause.items()}, int(group))


def worker_rows(analysis: SessionAnalysis) -> list[dict]:
    rows = []
    for w in analysis.workers:
        busy, idle = w.busy_us, w.idle_us
        wall = w.steps.wall_us
        row = {"worker": w.worker.label, "devices": len(w.devices), "busy_ms": busy / AXIS_UNIT_US,
               "idle_ms": idle / AXIS_UNIT_US, "idle_pct": 100 * idle / (busy + idle) if busy + idle else 0.0,
               "steps": len(w.steps), "mean_step_ms": float(wall.mean()) / AXIS_UNIT_US if wall.size else 0.0}
        row.update({f"{cause}_ms": us / AXIS_UNIT_US for cause, us in w.pieces.idle_by_cause().items()})
        rows.append(row)
    return rows


def session_date(summary: SessionSummary) -> str:
    """When the session was captured, in this machine's local time."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(summary.created_unix))


def session_row(listed: ListedSession) -> dict:
    summary, figures = listed.session, listed.figures
    row = {"run": summary.run, "date": session_date(summary),
           "workers": len(summary.workers), "duration_us": None, "idle_pct": None, "step_median_us": None,
           "error": listed.error}
    if figures is not None:
        row.update(workers=len(figures.workers), duration_us=figures.window_us, idle_pct=100 * figures.idle_share,
                   step_median_us=figures.step_median_us)
    return row
