"""Ranked, actionable findings: what cost device time, where, and the fix in torch_xla terms.

Contract: ``rank_findings(costs, compiles, reads, fallbacks, executions)`` turns the idle time
charged to each (cause, span, source) into ``Finding`` rows, adds CPU fallbacks from the worker
metrics and the forced executions of the debug files, and returns them sorted by ``lost_us``
(device microseconds, summed over devices and workers), largest first. ``kind`` is a
``FindingKind``: the cause's name, or ``recompilation`` for compile time in a span that compiled
several graphs, ``capture_edge`` for unattributed time at the capture's edges, ``cpu_fallback``,
or ``forced_execution`` for the lines that torch_xla's debug file says forced an early execution
by reading a value (not timed: the file has no timestamps).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from xlaprof.analysis.attribution import Cause
from xlaprof.analysis.compiles import CompileSummary
from xlaprof.analysis.reads import ReadSummary
from xlaprof.analysis.span_index import NO_SPAN
from xlaprof.units import format_duration


class FindingKind(str, Enum):
    TRANSFER_FROM_DEVICE = Cause.TRANSFER_FROM_DEVICE.value
    COMPILE = Cause.COMPILE.value
    RECOMPILATION = "recompilation"
    TRANSFER_TO_DEVICE = Cause.TRANSFER_TO_DEVICE.value
    HOST_TRACING = Cause.HOST_TRACING.value
    UNATTRIBUTED = Cause.UNATTRIBUTED.value
    CAPTURE_EDGE = "capture_edge"
    CPU_FALLBACK = "cpu_fallback"
    FORCED_EXECUTION = "forced_execution"


ADVICE = {
    FindingKind.TRANSFER_FROM_DEVICE: (
        "Reading a tensor's value on the host (.item(), print(t), bool(t), .tolist(), nonzero) "
        "blocks until the device finishes, so the next step cannot be traced ahead. Keep the value "
        "on the device and read it every N steps, or hand it to xm.add_step_closure(fn, (t,)) so it "
        "is read after the step is dispatched."),
    FindingKind.RECOMPILATION: (
        "This span compiled several different graphs: shapes (or Python scalars baked into the "
        "graph) change between steps. Pad inputs to a fixed shape or bucket them to a few sizes, "
        "pass changing scalars as tensors, and run with PT_XLA_DEBUG_LEVEL=2 to see each compile's "
        "cause."),
    FindingKind.COMPILE: (
        "A graph was compiled here. One compile per distinct graph is expected while warming up; "
        "if it recurs in steady state the graph is changing between steps."),
    FindingKind.TRANSFER_TO_DEVICE: (
        "Inputs are copied to the device inside the step. Wrap the loader in "
        "torch_xla.distributed.parallel_loader.MpDeviceLoader to prefetch batches to the device "
        "in the background."),
    FindingKind.HOST_TRACING: (
        "The device waits while the host runs this span's Python and traces the graph. Move work "
        "that does not need the device out of the step (preprocessing, logging), avoid syncs inside "
        "the step so tracing overlaps execution, or trace once with torch_xla.compile."),
    FindingKind.UNATTRIBUTED: (
        "The device is idle while the host shows no recorded activity (data loading, sleeping, "
        "untraced Python). Wrap the suspects in xlaprof.trace(...) to see them in the next capture."),
    FindingKind.CAPTURE_EDGE: (
        "Host events that started before the capture or ended after it (a long compile, say) are "
        "not recorded. Capture a longer window, or start it while the workload is in steady state."),
    FindingKind.CPU_FALLBACK: (
        "These aten ops have no XLA lowering and ran on the CPU, each a device-to-host-to-device "
        "round trip. Replace them with ops torch_xla lowers, or move them out of the step."),
}
ADVICE[FindingKind.FORCED_EXECUTION] = ADVICE[FindingKind.TRANSFER_FROM_DEVICE]

# torch_xla's execution cause when a value read (.item(), print) forces a graph to run early.
FORCED_BY_READ = "access tensor value"


@dataclass
class Finding:
    kind: FindingKind
    lost_us: float  # device idle time charged to it
    span: str | None
    source: str | None
    advice: str
    detail: str  # what happened, in a sentence
    count: int = 0  # events behind it (reads, compiles, fallback ops), where counted


@dataclass
class CauseCost:
    cause: Cause
    span: str | None
    source: str | None
    lost_us: float
    pieces: int
    at_capture_edge: bool = False  # unattributed time at the window's edges (see analysis)


@dataclass(frozen=True)
class ExecutionCause:
    """Graph executions with one (cause, user frame) in a worker's debug file."""

    worker: str
    cause: str | None
    frame: str | None  # file:line
    count: int


def rank_findings(costs: list[CauseCost], compiles: CompileSummary, reads: ReadSummary,
                  fallbacks: dict[str, float], executions: list[ExecutionCause] = ()) -> list[Finding]:
    findings = [_cost_finding(cost, compiles, reads) for cost in costs if cost.lost_us > 0]
    for row in executions:
        if FORCED_BY_READ in (row.cause or "") and row.frame:
            findings.append(Finding(
                FindingKind.FORCED_EXECUTION, 0.0, None, row.frame, ADVICE[FindingKind.FORCED_EXECUTION],
                f"torch_xla ran a graph early {row.count} time(s) on {row.worker} because code read a "
                f"tensor's value before the step's sync, at {row.frame} (PT_XLA_DEBUG_FILE, whole run)",
                row.count))
    if fallbacks:
        ops = ", ".join(f"{name} x{int(n)}" for name, n in sorted(fallbacks.items(), key=lambda kv: -kv[1])[:6])
        findings.append(Finding(FindingKind.CPU_FALLBACK, 0.0, None, None, ADVICE[FindingKind.CPU_FALLBACK],
                                f"CPU fallbacks: {ops}", int(sum(fallbacks.values()))))
    findings.sort(key=lambda f: (-f.lost_us, f.kind.value))
    return findings


def _cost_finding(cost: CauseCost, compiles: CompileSummary, reads: ReadSummary) -> Finding:
    where = f"in {cost.span}" if cost.span else "outside any xlaprof span"
    span_key = cost.span or NO_SPAN
    kind, count = FindingKind(cost.cause.value), cost.pieces
    if cost.cause is Cause.COMPILE:
        graphs = compiles.recompiled_spans.get(span_key, 0)
        count = compiles.by_span.get(span_key, 0)
        if graphs > 1:
            kind = FindingKind.RECOMPILATION
            detail = f"{count} compiles of {graphs} different graphs {where}"
        else:
            detail = f"{count} compile(s) {where}"
        trigger = compiles.trigger_by_span.get(span_key)
        if trigger and trigger.trigger:
            detail += f" (torch_xla: '{trigger.cause}' at {trigger.trigger})"
    elif cost.cause is Cause.TRANSFER_FROM_DEVICE:
        count = reads.by_span.get(span_key, 0)
        detail = f"{count} blocking read(s) of device values (TransferFromDevice) {where}"
    elif cost.cause is Cause.TRANSFER_TO_DEVICE:
        detail = f"host-to-device input transfers {where}"
    elif cost.cause is Cause.HOST_TRACING:
        detail = f"host Python and graph tracing {where}"
    elif cost.at_capture_edge:
        kind = FindingKind.CAPTURE_EDGE
        detail = "unknown host activity at the capture's start or end (events already running then are not recorded)"
    else:
        detail = f"no recorded host activity {where}"
    return Finding(kind, cost.lost_us, cost.span, cost.source, ADVICE[kind],
                   f"{detail} left the device idle for {format_duration(cost.lost_us)}", count)
