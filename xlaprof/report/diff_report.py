"""The JSON report of ``xlaprof diff --json``: a comparison of two sessions, built here only.

Contract: ``diff_json(diff, budgets)`` returns one JSON-ready dict (times in microseconds of
device time summed over devices; every compared figure a change ``{"before", "after", "delta",
"relative"}`` with ``relative`` the change as a share of ``before``, null where ``before`` is 0):
``before``/``after`` (each session's path, workers, window, steps, events), ``verdict`` (the
one-line answer, ``report.verdict``), ``step_time`` (null without steps: ``steps``,
``median_us``, ``p90_us``, ``median_ci``/``p90_ci`` as ``[low, high]`` relative changes or null,
``significant``, ``level``, ``method``), ``window_us``, ``device_busy_us``, ``device_idle_us``,
``idle_share``, ``idle_by_cause_us`` (cause -> change), ``compiles`` (``count``, ``total_us``),
``transfers_from_device`` (``count``, ``blocked_us``), ``findings`` (``status``: resolved, new,
changed or unchanged; ``kind``, ``span``, ``source``, ``lost_us`` and ``count`` as changes, and
the finding itself ``before``/``after`` as in ``analyze --json``, null where absent), ``workers``
(per pair of workers of a pod; empty for one worker on each side), ``unpaired_workers`` and
``budgets`` (each ``budget``, ``exceeded``, ``message``).
Added (issue 30), so that windows holding different numbers of steps compare: ``per_step`` (null
unless both sessions have steps): ``steps`` and, per step, ``device_busy_us``, ``device_idle_us``
and ``idle_by_cause_us`` (the window's time, summed over devices and workers, over its steps: what
one step of the job costs, the time between steps included); ``per_second``: ``device_busy_us``, ``device_idle_us``
and ``idle_by_cause_us`` per second of window. The verdict reads them. Versioned as ``analyze --json``
(``json_contract``: ``schema_version``, rounded times, paths relative to ``source_root``); the
published schema is ``schemas/diff.schema.json``.
"""
from __future__ import annotations

from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.compare.budgets import BudgetResult
from xlaprof.analysis.compare.finding_match import FindingChange
from xlaprof.analysis.compare.session_diff import Change, SessionDiff, StepTimeChange, WorkerDiff
from xlaprof.report.json_contract import finalize
from xlaprof.report.json_report import finding_json
from xlaprof.report.verdict import verdict


def diff_json(diff: SessionDiff, budgets: list[BudgetResult] = (), source_root: str | None = None) -> dict:
    config = diff.config
    method = (f"percentile bootstrap over steps, sessions resampled independently, {config.resamples} "
              f"resamples, seed {config.seed}")
    data = {
        "before": _session_json(diff.before, diff.steps.before),
        "after": _session_json(diff.after, diff.steps.after),
        "step_time": _step_time_json(diff.step_time, config.level, method),
        "window_us": change_json(diff.window_us),
        "device_busy_us": change_json(diff.busy_us),
        "device_idle_us": change_json(diff.idle_us),
        "idle_share": change_json(diff.idle_share),
        "idle_by_cause_us": {cause: change_json(c) for cause, c in diff.idle_by_cause_us.items()},
        "compiles": {"count": change_json(diff.compiles), "total_us": change_json(diff.compile_us)},
        "transfers_from_device": {"count": change_json(diff.reads), "blocked_us": change_json(diff.read_blocked_us)},
        "findings": [finding_change_json(c) for c in diff.findings],
        "workers": [_worker_json(w, config.level, method) for w in diff.workers],
        "unpaired_workers": diff.unpaired,
        "budgets": [{"budget": r.budget.text, "exceeded": r.exceeded, "message": r.message} for r in budgets],
        "per_step": _per_step_json(diff),
        "per_second": _rates_json(*(_rates(side, side.window_us / 1e6) for side in (diff.before, diff.after))),
    }
    return finalize({"verdict": verdict(data), **data}, source_root)


def change_json(change: Change) -> dict:
    return {"before": change.before, "after": change.after, "delta": change.delta,
            "relative": change.relative if change.before else None}


def finding_change_json(c: FindingChange) -> dict:
    f = c.finding
    return {"status": c.status.value, "kind": f.kind.value, "span": f.span, "source": f.source,
            "lost_us": change_json(Change(c.lost_before_us, c.lost_after_us)),
            "count": change_json(Change(c.before.count if c.before else 0, c.after.count if c.after else 0)),
            "before": finding_json(c.before) if c.before else None,
            "after": finding_json(c.after) if c.after else None}


def _session_json(analysis: SessionAnalysis, steps: int) -> dict:
    return {"session": analysis.session.path, "workers": [w.worker.label for w in analysis.summaries],
            "window_us": analysis.window_us, "steps": int(steps),
            "event_count": analysis.event_count}


def _per_step_json(diff: SessionDiff) -> dict | None:
    steps = diff.steps
    if not steps.before or not steps.after:
        return None
    before, after = (_rates(side, n) for side, n in ((diff.before, steps.before), (diff.after, steps.after)))
    return {"steps": change_json(steps), **_rates_json(before, after)}


def _rates(analysis: SessionAnalysis, per: float) -> dict[str, float]:
    """The window's device time over ``per`` (its steps, or its seconds): "busy" and each cause."""
    rate = (lambda us: us / per) if per > 0 else (lambda us: 0.0)
    return {"busy": rate(analysis.busy_us), **{c: rate(us) for c, us in analysis.idle_by_cause.items()}}


def _rates_json(before: dict[str, float], after: dict[str, float]) -> dict:
    causes = [c for c in before if c != "busy"]
    return {"device_busy_us": change_json(Change(before["busy"], after["busy"])),
            "device_idle_us": change_json(Change(sum(before[c] for c in causes), sum(after.get(c, 0.0) for c in causes))),
            "idle_by_cause_us": {c: change_json(Change(before[c], after.get(c, 0.0))) for c in causes}}


def _step_time_json(step: StepTimeChange | None, level: float, method: str) -> dict | None:
    if step is None:
        return None
    return {"steps": change_json(step.steps), "median_us": change_json(step.median_us),
            "p90_us": change_json(step.p90_us), "median_ci": list(step.median_ci) if step.median_ci else None,
            "p90_ci": list(step.p90_ci) if step.p90_ci else None, "significant": step.significant,
            "level": level, "method": method}


def _worker_json(w: WorkerDiff, level: float, method: str) -> dict:
    return {"before": w.before, "after": w.after, "step_time": _step_time_json(w.step_time, level, method),
            "device_busy_us": change_json(w.busy_us), "device_idle_us": change_json(w.idle_us),
            "idle_by_cause_us": {cause: change_json(c) for cause, c in w.idle_by_cause_us.items()}}
