"""Analyse a session: device timelines, idle gaps by cause, compiles, reads, steps, findings.

Contract: ``analyze(session, config)`` returns a ``SessionAnalysis``, a typed result (times in
microseconds of device time, summed over devices; ``idle_by_cause`` adds up to ``idle_us``).
The analysis only reads the model; it never plots, never writes, and never serializes (the JSON
contract is ``xlaprof.report.json_report``). A session opened but not read yet is read first.
A worker whose capture shows no device activity is reported in ``errors``; a session in which
no worker has any raises ``BadProfileError``. ``analyze`` takes a path too. For notebooks
(issue 21): the result's tables ``gaps``, ``findings``, ``idle_by_line``, ``steps``, ``graphs``,
``ops`` and ``compiles`` (its per-compile ``events``) are ``tables.Table``s with
``to_pandas()``, and the result shows itself as a short HTML summary (``summary_html``).
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property

import numpy as np

from xlaprof.analysis.common import intervals
from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.common.tables import Table, columns_of
from xlaprof.analysis.compiles.compiles import (
    COMPILE_AT_START,
    COMPILE_AT_STOP,
    CompileRecord,
    CompileSummary,
    compile_records,
    summarize_compiles,
)
from xlaprof.analysis.compiles.recompiles import RecompileExplanation, merge_recompiles, with_changes
from xlaprof.analysis.device.device_profile import DeviceProfile, GraphProfile, OpStat, merge_profiles
from xlaprof.analysis.device.device_timeline import DeviceTimeline, device_timelines
from xlaprof.analysis.device.programs import ProgramExecutions, compile_programs, program_executions
from xlaprof.analysis.findings.findings import ExecutionCause, Finding, rank_findings
from xlaprof.analysis.findings.recompile_findings import explained_findings
from xlaprof.analysis.host.debug_file import DebugInfo, read_debug_file
from xlaprof.analysis.host.host_activity import HostActivity
from xlaprof.analysis.idle.attribution import CAUSES, Cause, CauseIntervals, GapPieces, attribute
from xlaprof.analysis.idle.idle_costs import LineIdle, idle_by_line, merge_cost_groups
from xlaprof.analysis.idle.read_reruns import read_reruns
from xlaprof.analysis.idle.read_slowdown import busy_added
from xlaprof.analysis.idle.reads import ReadSummary, merge_reads, summarize_reads
from xlaprof.analysis.idle.steps import StepTable, step_table
from xlaprof.analysis.pipeline.summary_html import summary_html
from xlaprof.analysis.pipeline.worker_comparison import WorkerComparison, compare_workers
from xlaprof.analysis.pipeline.worker_summary import GapRow, WorkerSummary, summarize_worker, worker_gap_rows
from xlaprof.errors import BadProfileError
from xlaprof.hlo import HloModules, hlo_modules
from xlaprof.session import Session, Worker, newest_readable, storage
from xlaprof.session.layout import debug_file_name
from xlaprof.session.manifest import WorkerStatus
from xlaprof.xspace.metrics import MetricsDelta, window_metrics

HOST_RECORDED_SHARE = 0.5
NO_STACKS_NOTE = ("no Python stacks in the capture of {workers} (a worker without xlaprof's stack sampler: "
                  "xp.start_server, an older xlaprof, one installed without a C compiler, or stack_hz=0): "
                  "lines come from spans only")


@dataclass
class AnalysisConfig:
    """What ``analyze`` is asked for beyond the capture: ``AnalysisConfig(debug_file="pt_debug.txt")``
    joins a PT_XLA_DEBUG_FILE kept elsewhere to every worker's compiles and executions."""

    top_gaps: int = 200  # gap pieces listed in the JSON report, largest first (all are counted)
    debug_file: str | None = None  # a PT_XLA_DEBUG_FILE to join with every worker's compiles


@dataclass
class WorkerAnalysis:
    __repr__ = short_repr
    worker: Worker
    window: tuple[float, float]  # us on this worker's clock
    devices: list[DeviceTimeline]
    host: HostActivity
    pieces: GapPieces
    compiles: list[CompileRecord]
    reads: ReadSummary
    steps: StepTable
    metrics: MetricsDelta | None  # None: the worker recorded no metric snapshots
    debug: DebugInfo  # from the worker's PT_XLA_DEBUG_FILE; empty without one
    programs: ProgramExecutions  # every program run with its program and dispatching span (``programs``)
    hlo: HloModules  # the compiled programs recorded in the capture, parsed on demand

    @property
    def busy_us(self) -> float:
        return sum(intervals.total(*intervals.clip(d.busy_starts, d.busy_ends, *self.window)) for d in self.devices)

    @property
    def idle_us(self) -> float:
        return float(self.pieces.dur_us.sum())

    @property
    def status(self) -> WorkerStatus:
        return WorkerStatus(self.worker.manifest.get("status", WorkerStatus.OK.value))

    def at_capture_edge(self) -> np.ndarray:
        """Unattributed pieces touching the window's start or end that no sampled stack explains.
        Host events already running when the capture started, or still running when it stopped,
        are not recorded, so the host's activity there is unknown rather than absent."""
        p = self.pieces
        touches = (p.start_us <= self.window[0]) | (p.start_us + p.dur_us >= self.window[1])
        return touches & (p.cause == CAUSES.index(Cause.UNATTRIBUTED)) & (p.stack < 0)

    def piece_place(self, i: int) -> tuple[str | None, str | None, tuple[str, ...]]:
        """Piece ``i``'s span, its source (the stack's line, else the span's) and its stack."""
        span, span_source = self.host.spans.label(int(self.pieces.span[i]))
        stack_id = int(self.pieces.stack[i])
        if stack_id < 0:
            return span, span_source, ()
        stack = self.host.stacks.stacks[stack_id]
        return span, stack.source or span_source, stack.to_source


@dataclass
class SessionAnalysis:
    """The result of ``analyze``: per-worker summaries, ranked findings, and session totals (times
    in microseconds of device time, summed over devices). ``workers``, the per-worker analyses with
    their captures, are kept when the session was analysed in this process, else analysed here on
    first use (the dashboard's timeline and gap views need them)."""

    __repr__ = short_repr

    session: Session
    summaries: list[WorkerSummary]
    findings: list[Finding]
    compiles: CompileSummary
    reads: ReadSummary
    comparison: WorkerComparison
    execution_causes: list[ExecutionCause]  # from the workers' debug files, most first
    config: AnalysisConfig
    errors: list[str] = field(default_factory=list)
    recompiles: list[RecompileExplanation] = field(default_factory=list)  # why places recompiled, most time first
    idle_by_line: list[LineIdle] = field(default_factory=list)  # Python lines by the idle time they caused
    notes: list[str] = field(default_factory=list)  # what the analysis could not do, said once
    analysed: list[WorkerAnalysis] | None = field(default=None, repr=False)  # None: analysed elsewhere

    @property
    def workers(self) -> list[WorkerAnalysis]:
        if self.analysed is None:
            self.session.read()
            given = read_debug_file(self.config.debug_file) if self.config.debug_file else None
            found = [analyze_worker(w, self.session.path, given)[0] for w in self.session.workers]
            self.analysed = [w for w in found if w is not None]
        return self.analysed

    def _repr_html_(self) -> str:
        return summary_html(self)

    @property
    def gaps(self) -> Table:
        """Every idle gap piece: worker, device, start_us, dur_us, cause, span, source, stack, at_capture_edge."""
        return Table((asdict(row) for w in self.workers for row in worker_gap_rows(w)), columns_of(GapRow))

    @property
    def steps(self) -> Table:
        """Every step of every worker: worker, step, name, start_us, wall_us, busy_us and idle us per cause."""
        rows = Table(columns=("worker", "step", "name", "start_us", "wall_us", "busy_us") + tuple(
            f"idle_{c.value}_us" for c in CAUSES))
        for w in self.workers:
            for row in w.steps.rows():
                idle = row.pop("idle_by_cause_us")
                rows.append({"worker": w.worker.label, **row, **{f"idle_{c}_us": us for c, us in idle.items()}})
        return rows

    @property
    def graphs(self) -> Table:
        """Device time per compiled graph (``device_profile.graphs``; each row's ``ops`` nested)."""
        return Table(self.device_profile.graphs, columns_of(GraphProfile))

    @property
    def ops(self) -> Table:
        """Every graph's HLO ops by self time, with the graph's worker, program_id and module."""
        return Table(({"worker": g.worker, "program_id": g.program_id, "module": g.module, **asdict(op)}
                      for g in self.device_profile.graphs for op in g.ops),
                     ("worker", "program_id", "module") + columns_of(OpStat))

    @cached_property
    def device_profile(self) -> DeviceProfile:
        """Device time by graph, HLO instruction and Python line."""
        return merge_profiles([s.graphs for s in self.summaries])

    @property
    def compiles_before_window(self) -> int | None:
        """Graphs the workers had compiled before the window (summed; None when no metrics say)."""
        known = [w.metrics.compiles_before for w in self.summaries if w.metrics is not None]
        known = [n for n in known if n is not None]
        return sum(known) if known else None

    @property
    def busy_us(self) -> float:
        return sum(w.busy_us for w in self.summaries)

    @property
    def idle_us(self) -> float:
        return sum(w.idle_us for w in self.summaries)

    @property
    def window_us(self) -> float:
        return max((w.window[1] - w.window[0] for w in self.summaries), default=0.0)

    @property
    def event_count(self) -> int:
        return sum(w.event_count for w in self.summaries)

    @property
    def fallbacks(self) -> dict[str, float]:
        return _fallbacks(self.summaries)

    @property
    def idle_by_cause(self) -> dict[str, float]:
        total = dict.fromkeys((c.value for c in CAUSES), 0.0)
        for w in self.summaries:
            for cause, us in w.idle_by_cause.items():
                total[cause] += us
        return total

    @property
    def gap_count(self) -> int:
        return sum(w.gap_count for w in self.summaries)


@dataclass(frozen=True)
class WorkerTask:
    """One worker's part of an analysis, as a task a Dask worker runs (``summarize_worker_task``):
    it reads the capture at ``worker.path`` itself (a local path or an fsspec URL)."""

    worker: Worker  # without its capture
    session_path: str
    config: AnalysisConfig
    debug: DebugInfo | None  # the debug file given for all workers (read by the client), else None


@dataclass(frozen=True)
class WorkerOutcome:
    summary: WorkerSummary | None
    error: str | None  # why the worker has no analysis (no device activity)


def summarize_worker_task(task: WorkerTask) -> WorkerOutcome:
    """Read, analyse and summarize one worker; only the summary leaves the task."""
    worker = replace(task.worker)
    worker.read()
    analysis, error = analyze_worker(worker, task.session_path, task.debug)
    return WorkerOutcome(summarize_worker(analysis, task.config.top_gaps) if analysis else None, error)


def analyze(session: Session | str | os.PathLike, config: AnalysisConfig | None = None, *,
            run_tasks: Callable[[Callable, list], list] | None = None) -> SessionAnalysis:
    """Attribute every microsecond of device idle time in ``session`` to a cause and a span.

    ``session`` is a path (a session directory, a logdir: its newest session, or one
    ``.xplane.pb`` file), or a ``Session`` from ``Session.load(path)`` (or ``Session.open(path)``:
    its captures are read here). ``config`` tunes the report (``AnalysisConfig``). ``run_tasks(fn,
    tasks)``, when given, runs ``summarize_worker_task`` over the workers' ``WorkerTask``s elsewhere
    (a Dask cluster: ``xlaprof.dask_tasks``) and returns the ``WorkerOutcome``s in order; the captures are
    then never read in this process. Returns a ``SessionAnalysis``, whose tables (``gaps``,
    ``findings``, ``idle_by_line``, ``steps``, ``graphs``, ``ops``, ``compiles``) each convert with
    ``.to_pandas()``.
    Raises ``SessionNotFoundError`` for a path that holds no session, and ``BadProfileError``
    when no worker's capture holds any device activity. A logdir's runs that cannot be read or
    analysed are skipped for the newest that can, with a warning each (``newest_readable``)."""
    if not isinstance(session, Session):
        return newest_readable(session, lambda found: analyze(found, config, run_tasks=run_tasks))
    config = config or AnalysisConfig()
    given = read_debug_file(config.debug_file) if config.debug_file else None  # one file for all workers
    analysed = None
    if run_tasks is None:
        session.read()
        found = [analyze_worker(worker, session.path, given) for worker in session.workers]
        analysed = [a for a, _ in found if a is not None]
        outcomes = [WorkerOutcome(summarize_worker(a, config.top_gaps) if a else None, error) for a, error in found]
    else:
        tasks = [WorkerTask(replace(w, space=None), session.path, config, given) for w in session.workers]
        outcomes = run_tasks(summarize_worker_task, tasks)
    summaries = [o.summary for o in outcomes if o.summary is not None]
    errors = [o.error for o in outcomes if o.error is not None]
    if not summaries:
        raise BadProfileError(errors[0] if errors else f"{session.path}: nothing to analyse")
    return merge_summaries(session, summaries, config, errors, analysed)


def merge_summaries(session: Session, summaries: list[WorkerSummary], config: AnalysisConfig,
                    errors: list[str], analysed: list[WorkerAnalysis] | None = None) -> SessionAnalysis:
    """The session's analysis from its workers' summaries (in worker order)."""
    compiles = summarize_compiles([r for w in summaries for r in w.compiles],
                                  [w.worker.label for w in summaries for _ in w.compiles])
    reads = merge_reads([w.reads for w in summaries])
    executions = sorted((row for w in summaries for row in w.executions), key=lambda r: -r.count)
    costs = merge_cost_groups([w.cost_groups for w in summaries], [w.worker.label for w in summaries])
    recompiles = merge_recompiles([w.recompiles for w in summaries])
    findings = explained_findings(rank_findings(costs, compiles, reads, _fallbacks(summaries), executions), recompiles)
    return SessionAnalysis(session, summaries, Table(findings, columns_of(Finding)), compiles, reads,
                           compare_workers(summaries), executions, config, errors, recompiles,
                           Table(idle_by_line(costs), columns_of(LineIdle)), _notes(summaries), analysed)


def analyze_worker(worker: Worker, session_path: str,
                   given: DebugInfo | None) -> tuple[WorkerAnalysis | None, str | None]:
    """One read worker's analysis, or why there is none (its capture shows no device activity)."""
    devices = device_timelines(worker.space)
    if not devices:
        return None, (f"{worker.path}: no device activity in the capture (no /device:TPU or GPU planes "
                      f"and no XLA CPU executions): was the worker running steps while it was captured?")
    return _analyze_worker(worker, devices, given or _debug_beside(session_path, worker)), None


def _notes(summaries: list[WorkerSummary]) -> list[str]:
    unsampled = [w.worker.label for w in summaries if not w.has_stacks]
    return [NO_STACKS_NOTE.format(workers=", ".join(unsampled))] if unsampled else []


def _fallbacks(workers: list[WorkerSummary]) -> dict[str, float]:
    """``aten::`` CPU fallbacks in the window, summed over workers, most first."""
    total: dict[str, float] = defaultdict(float)
    for w in workers:
        for op, n in (w.metrics.fallbacks if w.metrics else {}).items():
            total[op] += n
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def _analyze_worker(worker: Worker, devices: list[DeviceTimeline], debug: DebugInfo) -> WorkerAnalysis:
    space = worker.space
    host = HostActivity.from_space(space)
    window = _recorded(space.window_us or _event_extent(devices, host), host, devices)
    causes = CauseIntervals.from_host(host)
    programs = program_executions(devices, host)
    hlo = hlo_modules(space)
    reruns = read_reruns(programs, hlo, host.transfers_from_device, len(devices))
    pieces = GapPieces.concat([attribute(d, i, host, causes, window, reruns[i]) for i, d in enumerate(devices)])
    records = compile_records(host, debug)
    records = [r for r in records if window[0] <= r.start_us < window[1]]
    metrics = window_metrics(host.plane)
    at_edge, pieces = _compile_at_edge(pieces, window, host, metrics, len(records))
    records += at_edge
    records = with_changes(_linked_programs(records, programs, hlo), hlo)
    reads = summarize_reads(host, busy_added(devices, programs, host.transfers_from_device), reruns.sum(axis=0))
    return WorkerAnalysis(worker, window, devices, host, pieces, records, reads,
                          step_table(devices, pieces, host, window), metrics, debug, programs, hlo)


def _recorded(window: tuple[float, float], host: HostActivity, devices: list[DeviceTimeline]) -> tuple[float, float]:
    """The window, ended where the last recorded activity ends (the host's Python threads, or a
    device's execution): host events still open when the capture stopped are dropped, so what the
    host did after its last recorded event is unknown, and idle time there is no finding. On a
    thread whose stacks were sampled that is its last sample's end, not its last event's: the
    sampler's run still open at the stop (up to ``stack_sampler.MAX_EVENT_S``) is dropped, while the
    thread's runtime events (a threadpool's bookkeeping) go on being recorded. Only a tail is cut
    (recording went on past ``HOST_RECORDED_SHARE`` of the window): a capture that recorded little
    says nothing about where recording ended."""
    plane = host.plane
    if plane is None or not host.python_lines:
        return window
    unsampled = sorted(host.python_lines - set(host.stacks.sampled_lines))
    ends = [plane.last_end(unsampled) if unsampled else -np.inf,
            float(host.stacks.end.max()) if host.stacks.end.size else -np.inf]
    # A device's busy time; on an accelerator, anything its plane recorded (its Steps line, say).
    ends += [(float(d.busy_ends.max()) if d.busy_ends.size else -np.inf) if d.plane is plane else d.plane.last_end()
             for d in devices]
    last = max(ends)
    cut = window[0] + HOST_RECORDED_SHARE * (window[1] - window[0]) <= last < window[1]
    return (window[0], last) if cut else window


HOST_WORK_UNDER_EDGE_COMPILE = (Cause.UNATTRIBUTED, Cause.HOST_BLOCKED, Cause.HOST_TRACING)


def _compile_at_edge(pieces: GapPieces, window: tuple[float, float], host: HostActivity,
                     metrics: MetricsDelta | None, recorded: int) -> tuple[list[CompileRecord], GapPieces]:
    """Compiles running when the capture started or stopped have no compile event (a TraceMe
    begun before the capture is not recorded; one still open when it stops is dropped), but the
    capture holds their passes (``host.edge_compile``), or, at the start, the worker's metrics
    count one compile more than the capture shows. The unattributed idle time between the edge
    and the passes (at the start without passes: touching the window's start) is the compile's, as is
    the time the sampled stacks showed as the compiling thread's Python (blocked or running there:
    a compile runs inside the call that traced its graph). Returns those compiles' records and new
    pieces with that time charged to compile (the given pieces are left as they are)."""
    w0, w1 = window
    unattributed = np.isin(pieces.cause, [CAUSES.index(c) for c in HOST_WORK_UNDER_EDGE_COMPILE])
    middle = (w0 + w1) / 2
    edge = host.edge_compile
    at_start, at_stop = edge.end[edge.end <= middle], edge.start[edge.end > middle]
    compiled = metrics.compiles_in_window if metrics is not None else None
    records, charged = [], np.zeros(len(pieces), bool)
    if at_start.size:
        charged |= unattributed & (pieces.start_us < at_start.max())
        records.append(CompileRecord(w0, float(at_start.max()) - w0, None, None, None, cause=COMPILE_AT_START))
    elif compiled is not None and compiled > recorded:
        first = unattributed & (pieces.start_us <= w0)
        if first.any():
            charged |= first
            seen = float((pieces.start_us[first] + pieces.dur_us[first]).max())
            records.append(CompileRecord(w0, seen - w0, None, None, None, cause=COMPILE_AT_START))
    if at_stop.size:
        charged |= unattributed & (pieces.start_us + pieces.dur_us > at_stop.min())
        records.append(CompileRecord(float(at_stop.min()), w1 - float(at_stop.min()), None, None, None,
                                     cause=COMPILE_AT_STOP))
    cause = pieces.cause.copy()
    cause[charged] = CAUSES.index(Cause.COMPILE)
    return records, replace(pieces, cause=cause)


def _linked_programs(records: list[CompileRecord], programs: ProgramExecutions, hlo: HloModules
                     ) -> list[CompileRecord]:
    """The records, each with its compile's program id (see ``programs.compile_programs``)."""
    starts = np.array([r.start_us for r in records])
    ends = starts + np.array([r.dur_us for r in records])
    ran = set(programs.program.tolist())
    linked = compile_programs(starts, ends, programs, [p for p in hlo.ids() if p not in ran])
    return [replace(record, program_id=program) for record, program in zip(records, linked)]


def _event_extent(devices: list[DeviceTimeline], host: HostActivity) -> tuple[float, float]:
    starts = [d.busy_starts[:1] for d in devices] + [host.tracing.start[:1], host.compiles.start[:1]]
    ends = [d.busy_ends[-1:] for d in devices] + [host.tracing.end, host.compiles.end]
    lo = min((float(s.min()) for s in starts if s.size), default=0.0)
    hi = max((float(e.max()) for e in ends if e.size), default=lo)
    return lo, hi


def _debug_beside(session_path: str, worker: Worker) -> DebugInfo:
    """The worker's PT_XLA_DEBUG_FILE kept beside its capture, if any."""
    if not storage.isdir(session_path):
        return DebugInfo()
    beside = storage.join(session_path, debug_file_name(storage.basename(worker.path)))
    return read_debug_file(beside) if storage.exists(beside) else DebugInfo()
