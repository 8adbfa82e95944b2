"""The JSON report of ``xlaprof analyze --json``: the contract other tools rely on, built here only.

Contract: ``analysis_json(analysis)`` returns one JSON-ready dict with at least the keys of
docs/json-contract.md (times in microseconds of device time, summed over devices;
``idle_by_cause_us`` adds up to ``device_idle_us``): session, workers, window_us,
device_busy_us, device_idle_us, idle_by_cause_us, compiles, transfers_from_device, gaps (the
``config.top_gaps`` largest pieces, in worker/device/time order), gaps_total, findings (ranked),
steps, metrics, compile_events, execution_causes, step_alignment, per_worker, stragglers,
event_count, errors. ``slowest_in_steps``: per worker, the steps all workers ran in which it was
the slowest (issue 20). Keys may be added; the listed ones never move or change meaning.
``compiles.explained`` lists why each place recompiled (``analysis.recompiles``) and
``compiles.before_window`` how many graphs the workers had compiled before the window;
``graphs`` the device time of each compiled graph with its top HLO ops, and
``device_time_by_line`` the device time by Python line (``analysis.device_profile``).
Python stacks (issue 10): a gap's and a finding's ``source`` is the Python line from the sampled
stacks where there is one, and ``stack`` the frames from the thread's outermost down to it
("file:line function"); findings add ``code`` (the line's text) and ``called_from``;
``idle_by_line`` ranks Python lines by the idle time they caused, per cause; ``notes`` says once
what the analysis could not do (a worker without stacks); ``transfers_from_device.by_source``
counts reads by line.
``write_analysis_json(analysis, write)`` writes the same as compact JSON a piece at a time (the
CLI's ``--json`` when not indented), each worker's step rows made and dropped in turn.
Versioned (issue 21, ``json_contract``): ``schema_version`` first; times rounded to the
nanosecond; with ``source_root`` (the CLI passes its current directory) paths under it relative
to it and ``source_root`` stated last; the published schema is ``schemas/analysis.schema.json``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.compiles.compiles import CompileSummary
from xlaprof.analysis.device.device_profile import DeviceProfile
from xlaprof.analysis.findings.findings import Finding
from xlaprof.analysis.compiles.recompiles import RecompileExplanation
from xlaprof.analysis.idle.reads import ReadSummary
from xlaprof.analysis.idle.steps import StepTable
from xlaprof.analysis.pipeline.worker_comparison import WorkerComparison
from xlaprof.analysis.pipeline.worker_summary import WorkerSummary, largest_gaps, worker_gap_rows
from xlaprof.report.json_contract import Columns, Deferred, finalize, write_compact

MAX_EXECUTION_CAUSES = 50  # (cause, frame) rows of the debug files listed
MAX_GRAPHS = 50  # graphs listed, most device time first
MAX_OPS = 20  # ops listed per graph, most self time first
MAX_LINES = 50  # Python lines listed by device time


def analysis_json(analysis: SessionAnalysis, source_root: str | None = None) -> dict:
    return finalize(_report(analysis), source_root)


def write_analysis_json(analysis: SessionAnalysis, write: Callable[[bytes], object],
                        source_root: str | None = None) -> None:
    """``analysis_json`` as compact JSON, passed to ``write`` a piece at a time: each worker's step
    rows are made and written in turn, never all at once (a pod's report stays small)."""
    write_compact(_report(analysis), write, source_root)


def _report(analysis: SessionAnalysis) -> dict:
    return {
        "session": analysis.session.path,
        "workers": [worker_json(w) for w in analysis.summaries],
        "window_us": analysis.window_us,
        "device_busy_us": analysis.busy_us,
        "device_idle_us": analysis.idle_us,
        "idle_by_cause_us": analysis.idle_by_cause,
        "compiles": compiles_json(analysis.compiles, analysis.recompiles, analysis.compiles_before_window),
        "transfers_from_device": reads_json(analysis.reads),
        "gaps": gap_rows(analysis, largest=analysis.config.top_gaps),
        "gaps_total": analysis.gap_count,
        "findings": [finding_json(f) for f in analysis.findings],
        "idle_by_line": [dict(asdict(row), cause=row.cause.value, stack=list(row.stack))
                         for row in analysis.idle_by_line[:MAX_LINES]],
        "notes": analysis.notes,
        "steps": Deferred(lambda: ((w.worker.label, steps_json(w.steps)) for w in analysis.summaries)),
        "metrics": {w.worker.label: w.metrics.to_json() if w.metrics else None for w in analysis.summaries},
        "compile_events": [dict(asdict(r), worker=w.worker.label) for w in analysis.summaries for r in w.compiles],
        "execution_causes": [asdict(row) for row in analysis.execution_causes[:MAX_EXECUTION_CAUSES]],
        **comparison_json(analysis.comparison),
        **device_profile_json(analysis.device_profile),
        "event_count": analysis.event_count,
        "errors": analysis.errors,
    }


def worker_json(w: WorkerSummary) -> dict:
    return {"host": w.worker.label, "name": w.worker.name, "devices": list(w.devices),
            "busy_us": w.busy_us, "idle_us": w.idle_us, "window_us": w.window[1] - w.window[0],
            "idle_by_cause_us": w.idle_by_cause, "steps": len(w.steps), "status": w.status.value,
            "compiles_before_window": w.metrics.compiles_before if w.metrics else None}


def compiles_json(compiles: CompileSummary, explained: list[RecompileExplanation] = (),
                  before_window: int | None = None) -> dict:
    return {"count": compiles.count, "total_us": compiles.total_us, "by_span": compiles.by_span,
            "by_graph_hash": compiles.by_graph_hash, "recompiled_spans": compiles.recompiled_spans,
            "trigger_by_span": {span: asdict(t) for span, t in compiles.trigger_by_span.items()},
            "explained": [dict(asdict(e), kind=e.kind.value) for e in explained], "before_window": before_window}


def device_profile_json(profile: DeviceProfile) -> dict:
    return {"graphs": [dict(asdict(g), ops=[asdict(o) for o in g.ops[:MAX_OPS]], ops_total=len(g.ops))
                       for g in profile.graphs[:MAX_GRAPHS]],
            "device_time_by_line": [asdict(line) for line in profile.lines[:MAX_LINES]]}


def reads_json(reads: ReadSummary) -> dict:
    return asdict(reads)


def finding_json(f: Finding) -> dict:
    return dict(asdict(f), kind=f.kind.value, stack=list(f.stack),
                spans=[{"span": span, "lost_us": us} for span, us in f.spans])


def steps_json(steps: StepTable) -> Columns:
    return Columns(steps.columns())


def comparison_json(comparison: WorkerComparison) -> dict:
    return {"step_alignment": [asdict(row) for row in comparison.step_alignment],
            "per_worker": {label: asdict(row) for label, row in comparison.per_worker.items()},
            "stragglers": [asdict(s) for s in comparison.stragglers],
            "slowest_in_steps": comparison.slowest_in_steps}


def gap_rows(analysis: SessionAnalysis, largest: int | None = None) -> list[dict]:
    """Gap pieces as rows, by worker, device and time; only the ``largest`` ones if given (from
    the workers' summaries; all of them from the workers' analyses)."""
    if largest is None:
        rows = [row for w in analysis.workers for row in worker_gap_rows(w)]
    else:
        rows = largest_gaps(analysis.summaries, largest)
    return [dict(asdict(row), stack=list(row.stack)) for row in rows]
