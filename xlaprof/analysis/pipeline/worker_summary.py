"""What one worker's analysis contributes to its session's: small, typed, picklable.

Contract: ``summarize_worker(w, top_gaps)`` turns a ``WorkerAnalysis`` (which holds the worker's
whole capture) into a ``WorkerSummary`` that holds no event table: its figures, steps, metrics,
compiles, reads, its share of the idle costs (``idle_costs.worker_cost_groups``), of the device
profile (``device_profile.worker_graphs``) and of the recompile explanations
(``recompiles.worker_recompiles``), and its ``top_gaps`` largest gap pieces as ``GapRow``s (all of
them with ``top_gaps=None``; ties at the cutoff kept, so the session's largest pieces are always
among the workers' rows). A session's analysis is merged from these alone, whether the workers
were analysed here or as tasks on a Dask cluster (``xlaprof.dask_tasks``), so the two give the same
result. Its size grows with the worker's steps, gaps listed and distinct lines, not its events.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.compiles.compiles import CompileRecord
from xlaprof.analysis.device.device_profile import GraphProfile, worker_graphs
from xlaprof.analysis.findings.findings import ExecutionCause
from xlaprof.analysis.compiles.recompiles import RecompileExplanation, worker_recompiles
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.analysis.idle.idle_costs import CostGroup, worker_cost_groups
from xlaprof.analysis.idle.reads import ReadSummary
from xlaprof.analysis.idle.steps import StepTable
from xlaprof.session import Worker
from xlaprof.session.manifest import WorkerStatus
from xlaprof.xspace.metrics import MetricsDelta


@dataclass(frozen=True)
class GapRow:
    """One gap piece, placed: its worker, device, time, cause, span, Python line and stack."""

    worker: str
    device: str
    start_us: float
    dur_us: float
    cause: str
    span: str | None
    source: str | None
    stack: tuple[str, ...]
    at_capture_edge: bool


@dataclass
class WorkerSummary:
    __repr__ = short_repr
    worker: Worker  # without its capture (``space`` is None)
    origin_ns: int  # the worker's clock origin, ns since the epoch
    window: tuple[float, float]  # us on this worker's clock
    devices: list[str]  # device names
    busy_us: float
    idle_us: float
    idle_by_cause: dict[str, float]
    status: WorkerStatus
    event_count: int
    steps: StepTable
    metrics: MetricsDelta | None
    compiles: list[CompileRecord]
    reads: ReadSummary
    executions: list[ExecutionCause]  # from the worker's debug file
    cost_groups: list[CostGroup]  # ``idle_costs.worker_cost_groups``
    graphs: list[GraphProfile]  # ``device_profile.worker_graphs``
    recompiles: list[RecompileExplanation]  # ``recompiles.worker_recompiles``
    gap_count: int
    top_gaps: list[GapRow] = field(default_factory=list)
    has_stacks: bool = True  # the capture holds sampled Python stacks


def summarize_worker(w, top_gaps: int | None) -> WorkerSummary:
    """``w``: a ``WorkerAnalysis``."""
    label = w.worker.label
    executions = [ExecutionCause(label, cause, frame, n) for (cause, frame), n in w.debug.executions.items()]
    light = Worker(w.worker.name, w.worker.host, w.worker.port, w.worker.path, w.worker.manifest)
    return WorkerSummary(
        light, w.worker.space.origin_ns, w.window, [d.name for d in w.devices], w.busy_us, w.idle_us,
        w.pieces.idle_by_cause(), w.status, w.worker.space.event_count, w.steps, w.metrics, w.compiles, w.reads,
        executions, worker_cost_groups(w), worker_graphs(w), worker_recompiles(label, w.compiles, w.hlo),
        len(w.pieces), worker_gap_rows(w, top_gaps), bool(len(w.host.stacks)))


def worker_gap_rows(w, largest: int | None = None) -> list[GapRow]:
    """The worker's gap pieces in device and time order; with ``largest``, those at least as long
    as its ``largest``-th longest."""
    p = w.pieces
    chosen = range(len(p))
    if largest is not None and 0 < largest < len(p):
        chosen = np.flatnonzero(p.dur_us >= np.sort(p.dur_us)[-largest])
    edge = w.at_capture_edge()
    rows = []
    for i in chosen:
        span, source, stack = w.piece_place(int(i))
        rows.append(GapRow(w.worker.label, w.devices[p.device[i]].name, float(p.start_us[i]), float(p.dur_us[i]),
                           CAUSES[p.cause[i]].value, span, source, tuple(stack), bool(edge[i])))
    return rows


def largest_gaps(summaries: list[WorkerSummary], largest: int) -> list[GapRow]:
    """The session's ``largest`` gap pieces in worker, device and time order (ties at the cutoff
    broken by that order)."""
    rows = [row for s in summaries for row in s.top_gaps]
    total = sum(s.gap_count for s in summaries)
    if not 0 < largest < total:
        return rows
    cutoff = np.sort(np.array([r.dur_us for r in rows]))[-largest]
    rows = [r for r in rows if r.dur_us >= cutoff]
    if len(rows) > largest:
        keep = sorted(range(len(rows)), key=lambda r: -rows[r].dur_us)[:largest]
        rows = [rows[r] for r in sorted(keep)]
    return rows
