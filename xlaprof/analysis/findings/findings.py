"""Ranked, actionable findings: what cost device time, where, and the fix in torch_xla terms.

Contract: ``rank_findings(costs, compiles, reads, fallbacks, executions)`` turns the idle time
charged to each (cause, Python line) (``idle_costs.CauseCost``, merged over spans by
``idle_costs.one_per_line``: one finding per line, its ``spans`` the breakdown, its ``span`` the
costliest; a cost without a line stays one per span) into ``Finding`` rows, adds
CPU fallbacks from the worker metrics and the forced executions of the debug files, and returns
them sorted by ``cost_us`` (device microseconds, summed over devices and workers), largest first:
``workers``, the workers it happened on (said in the detail where the session has several),
``lost_us``, the idle time, and for reads ``busy_added_us``, the device time they added: to the
work running during them (``read_slowdown``), and their early graphs' work that later graphs ran
again (``read_reruns``), both said in the detail (the line's reads, else the span's).
``kind`` is a ``FindingKind``: the cause's name, or ``recompilation`` for compile time in a span
that compiled several graphs, ``capture_edge`` for unexplained time at the capture's edges,
``cpu_fallback``, or ``forced_execution`` for the lines that torch_xla's debug file says forced an
early execution by reading a value (not timed: the file has no timestamps).
A finding's ``source`` is the Python line from the sampled stacks where there is one, else its span's
own line; ``stack`` leads from the thread's outermost frame down to it. Idle time at lines inside a
third-party library is one finding at the user's call into it (``call_sites``), with the library's
lines in ``inside`` (for reads, their read counts), ranked by their sum.
The advice fits the case (``advice.advice_for``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.compiles.compiles import EDGE_COMPILE_CAUSES, CompileSummary
from xlaprof.analysis.findings.advice import ADVICE, FindingKind, advice_for
from xlaprof.analysis.host.frames import line_text, short_location
from xlaprof.analysis.host.span_index import NO_SPAN
from xlaprof.analysis.idle.attribution import Cause
from xlaprof.analysis.idle.call_sites import group_at_call_sites
from xlaprof.analysis.idle.idle_costs import CauseCost, one_per_line
from xlaprof.analysis.idle.reads import ReadSummary
from xlaprof.framework_files import framework_package
from xlaprof.units import format_duration

# torch_xla's execution cause when a value read (.item(), print) forces a graph to run early.
FORCED_BY_READ = "access tensor value"


@dataclass
class Finding:
    __repr__ = short_repr
    kind: FindingKind
    lost_us: float  # device idle time charged to it
    span: str | None
    source: str | None  # "file:line": the Python line (from stacks), else the span's line
    advice: str
    detail: str  # what happened, in a sentence
    count: int = 0  # events behind it (reads, compiles, fallback ops), where counted
    stack: tuple[str, ...] = ()  # "file:line function" from the outermost frame down to source
    code: str | None = None  # the source line's text, when the file is readable here
    called_from: str | None = None  # the nearest frame above source in another file
    inside: tuple = ()  # call_sites.LibraryLine: for a finding at the user's call into a library, its lines
    busy_added_us: float = 0.0  # reads: device time they added (work during them slowed, or run again)
    spans: tuple[tuple[str | None, float], ...] = ()  # (span, idle us) per span the line's time fell in
    workers: tuple[str, ...] = ()  # the workers it happened on

    @property
    def cost_us(self) -> float:
        """What it cost the device: the idle time, and for reads the device time they added."""
        return self.lost_us + self.busy_added_us


@dataclass(frozen=True)
class ExecutionCause:
    """Graph executions with one (cause, user frame) in a worker's debug file."""

    worker: str
    cause: str | None
    frame: str | None  # file:line
    count: int


def rank_findings(costs: list[CauseCost], compiles: CompileSummary, reads: ReadSummary,
                  fallbacks: dict[str, float], executions: list[ExecutionCause] = ()) -> list[Finding]:
    workers = len({w for cost in costs for w in cost.workers})
    costs = one_per_line(group_at_call_sites([cost for cost in costs if cost.lost_us > 0]))
    findings = [_cost_finding(cost, compiles, reads, workers) for cost in costs]
    for row in executions:
        if FORCED_BY_READ in (row.cause or "") and row.frame:
            findings.append(Finding(
                FindingKind.FORCED_EXECUTION, 0.0, None, row.frame, ADVICE[FindingKind.FORCED_EXECUTION],
                f"torch_xla ran a graph early {row.count} time(s) on {row.worker} because code read a "
                f"tensor's value before the step's sync, at {row.frame} (PT_XLA_DEBUG_FILE, whole run)",
                row.count))
    if fallbacks:
        findings.append(_fallback_finding(fallbacks, findings))
    findings.sort(key=lambda f: (-f.cost_us, f.kind.value))
    return findings


def _fallback_finding(fallbacks: dict[str, float], findings: list[Finding]) -> Finding:
    """The CPU fallbacks, tied to the reads they force: an op without an XLA lowering (nonzero,
    say) copies its input to the host, which is a read charged at its line."""
    ops = ", ".join(f"{name} x{int(n)}" for name, n in sorted(fallbacks.items(), key=lambda kv: -kv[1])[:6])
    detail = f"CPU fallbacks: {ops}"
    names = [op.split("::")[-1] for op in fallbacks]
    reading = [f for f in findings if f.kind is FindingKind.TRANSFER_FROM_DEVICE and f.code
               and any(name in f.code for name in names)]
    if reading:
        lines = "; ".join(f"{short_location(f.source)} ({f.count} reads, {format_duration(f.lost_us)})" for f in reading[:3])
        detail += f". Each copies its input to the host: the idle time is charged to the reads at {lines}"
    return Finding(FindingKind.CPU_FALLBACK, 0.0, None, reading[0].source if reading else None,
                   ADVICE[FindingKind.CPU_FALLBACK], detail, int(sum(fallbacks.values())))


def _on_workers(on: tuple[str, ...], workers: int) -> str:
    """Which workers, in words, where the session has several: " on host-a:9012", " on 3 of 4 workers"."""
    if workers < 2 or not on:
        return ""
    if len(on) == workers:
        return f" on all {workers} workers"
    return f" on {', '.join(on)}" if len(on) <= 2 else f" on {len(on)} of {workers} workers ({', '.join(on[:2])}, ...)"


def _where(cost: CauseCost) -> str:
    """The spans a finding's time fell in, in words: "in train_step", "in 3 spans (a, b, c)"."""
    names = [span or NO_SPAN for span, _ in cost.spans] or [cost.span or NO_SPAN]
    if len(names) > 1:
        return f"in {len(names)} spans ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
    return f"in {names[0]}" if names[0] != NO_SPAN else "outside any span"


def _cost_finding(cost: CauseCost, compiles: CompileSummary, reads: ReadSummary, workers: int) -> Finding:
    where = _where(cost) + _on_workers(cost.workers, workers)
    span_key = cost.span or NO_SPAN
    span_keys = [span or NO_SPAN for span, _ in cost.spans] or [span_key]
    kind, count, added, rerun = FindingKind(cost.cause.value), cost.pieces, 0.0, 0.0
    if cost.cause is Cause.COMPILE:
        # Outside any span the place is the line (its own, or the library's behind the user's call).
        lines = [line.source for line in cost.inside] or [cost.source]
        if span_keys == [NO_SPAN] and any(line in compiles.by_source for line in lines):
            graphs = sum(compiles.graphs_by_source.get(line, 0) for line in lines)
            count = sum(compiles.by_source.get(line, 0) for line in lines)
        else:
            graphs = sum(compiles.recompiled_spans.get(key, 0) for key in span_keys)
            count = sum(compiles.by_span.get(key, 0) for key in span_keys)
        if graphs > 1:
            kind = FindingKind.RECOMPILATION
            what = f"{count} compiles of {graphs} different graphs"
        else:
            what = f"{count} compile(s)"
        trigger = compiles.trigger_by_span.get(span_key)
        if trigger and trigger.cause in EDGE_COMPILE_CAUSES:
            what += " (caught mid-way: running when the capture started or stopped)"
        elif trigger and trigger.trigger:
            where += f" (torch_xla: '{trigger.cause}' at {trigger.trigger})"
    elif cost.cause is Cause.TRANSFER_FROM_DEVICE:
        if cost.inside:
            cost = replace(cost, inside=tuple(replace(line, pieces=reads.by_source.get(line.source, 0))
                                              for line in cost.inside))
            count = sum(line.pieces for line in cost.inside)
        else:
            count = reads.by_source.get(cost.source, 0) if cost.source else reads.by_span.get(span_key, 0)
        added, rerun = _by_line(cost, reads, span_key, "busy_added"), _by_line(cost, reads, span_key, "rerun")
        what = f"{count} blocking read(s) of device values"
        if cost.torch_frame and not cost.inside:  # made in torch's Python under the user's line (a check)
            location, _, function = cost.torch_frame.rpartition(" ")  # a path may hold spaces, a function not
            package = framework_package(location.rpartition(":")[0]) or "torch"
            what += f" in {package}'s {short_location(location)} {function}".rstrip()
    elif cost.cause is Cause.TRANSFER_TO_DEVICE:
        what = "host-to-device transfers"
    elif cost.cause is Cause.HOST_TRACING:
        what = ("host Python preparing a batch in the DataLoader" if cost.in_data_loader
                else "host Python and graph tracing")
    elif cost.cause is Cause.HOST_BLOCKED:
        what = "the loop blocked outside torch_xla"
    elif cost.at_capture_edge:
        kind = FindingKind.CAPTURE_EDGE
        what = "unknown host activity at the capture's start or end (events already running then are not recorded)"
        where = ""
    else:
        what = "no recorded host activity"
    if cost.inside:
        what += f" inside {_files(cost.inside)}, at {len(cost.inside)} line(s)"
    source = cost.source or cost.span_source
    code = line_text(cost.source)
    if cost.source:  # the line leads: "sched.py:659 `t.nonzero()` (called from train.py:42) ..."
        line = short_location(cost.source) + (f" `{code}`" if code else "")
        caller = f", called from {short_location(cost.called_from)}" if cost.called_from else ""
        detail = f"{line} ({what} {where}{caller}) left the device idle for {format_duration(cost.lost_us)}"
    else:
        detail = f"{what} {where} left the device idle for {format_duration(cost.lost_us)}"
    if rerun:
        detail += f"; later graphs ran {format_duration(rerun)} of their early graphs' device work again"
    if added - rerun > 0:
        detail += f"; the device work running during them took {format_duration(added - rerun)} longer"
    detail = detail.replace(" )", ")").replace("  ", " ")
    # Inside a library call, the advice fits its costliest line (the read that needs a value, say).
    advised_stack, advised_code = (cost.stack + (cost.inside[0].source,), cost.inside[0].code) if cost.inside \
        else (cost.stack, code)
    advice = advice_for(kind, advised_stack, advised_code, cost.in_data_loader,
                        rerun / (cost.lost_us + added) if rerun else 0.0, cost.torch_frame)
    return Finding(kind, cost.lost_us, cost.span, source, advice, detail, count, cost.stack, code, cost.called_from,
                   cost.inside, added, cost.spans, cost.workers)


def _by_line(cost: CauseCost, reads: ReadSummary, span_key: str, figure: str) -> float:
    """A device time of the reads behind a read finding (``figure``: "busy_added" or "rerun", as
    ``ReadSummary`` has it by source and by span): its lines', else its span's."""
    by_source, by_span = getattr(reads, f"{figure}_by_source"), getattr(reads, f"{figure}_by_span")
    if cost.inside:
        return sum(by_source.get(line.source, 0.0) for line in cost.inside)
    if cost.source:
        return by_source.get(cost.source, 0.0)
    return by_span.get(span_key, 0.0)


def _files(lines) -> str:
    return ", ".join(dict.fromkeys(short_location(line.source).rpartition(":")[0] for line in lines))
