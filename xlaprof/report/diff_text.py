"""The terminal report of ``xlaprof diff``: the verdict first, then the figures behind it.

Contract: ``render_diff_text(diff, budgets, top=10, source_root=None)`` returns plain text (no colour codes, fits
100 columns) rendered from ``diff_json`` (so text and JSON never disagree): the two sessions,
the verdict, step time (median and p90 with their confidence intervals), device time by cause per
step (when both sessions have steps), per second of window and as window totals,
compiles and reads, the findings that were resolved, are new or changed (``top`` of each), per
pair of workers of a pod, and the budgets checked. Times by
``xlaprof.units.format_duration``; paths under ``source_root`` relative to it.
"""
from __future__ import annotations

from xlaprof.analysis.compare.budgets import BudgetResult
from xlaprof.analysis.compare.session_diff import SessionDiff
from xlaprof.report.diff_report import diff_json
from xlaprof.report.text import rule
from xlaprof.units import format_duration as _t
from xlaprof.units import format_duration_change, format_interval, format_percent_change

WINDOW_MISMATCH = 0.10  # windows differing by more than this share get a note: totals are per window


def _rel(change: dict) -> str:
    return format_percent_change(change["relative"]) if change["relative"] is not None else ""


def _ci(ci: list | None) -> str:
    return format_interval(ci) if ci else "too few steps for a CI"


def render_diff_text(diff: SessionDiff, budgets: list[BudgetResult] = (), top: int = 10,
                     source_root: str | None = None) -> str:
    data = diff_json(diff, budgets, source_root)
    out = ["xlaprof diff\n"]
    for side in ("before", "after"):
        s = data[side]
        out.append(f"  {side + ':':<8}{s['session']}\n          window {_t(s['window_us'])}, {len(s['workers'])} "
                   f"worker(s), {s['steps']} step(s), {s['event_count']:,} events\n")
    out.append(f"\n{data['verdict']}\n")
    window = data["window_us"]
    if window["relative"] is not None and abs(window["relative"]) > WINDOW_MISMATCH:
        out.append(f"note: the windows differ ({_t(window['before'])} vs {_t(window['after'])}): window totals do not "
                   f"compare; the per-step and per-second tables do\n")
    out += _step_lines(data["step_time"])
    out += _idle_lines(data)
    out.append(rule("Compiles and reads"))
    compiles, reads = data["compiles"], data["transfers_from_device"]
    out.append(f"  compiles        {compiles['count']['before']:g} -> {compiles['count']['after']:g}   time "
               f"{_t(compiles['total_us']['before'])} -> {_t(compiles['total_us']['after'])}\n")
    out.append(f"  blocking reads  {reads['count']['before']:g} -> {reads['count']['after']:g}   host blocked "
               f"{_t(reads['blocked_us']['before'])} -> {_t(reads['blocked_us']['after'])}\n")
    out += _finding_lines(data["findings"], top)
    if data["workers"]:
        out += _worker_lines(data)
    if data["budgets"]:
        out.append(rule("Budgets"))
        out += [f"  {'EXCEEDED' if b['exceeded'] else 'ok':<9}{b['message']}\n" for b in data["budgets"]]
    return "".join(out)


def _step_lines(step: dict | None) -> list[str]:
    out = [rule("Step time (per-step wall time; confidence intervals by bootstrap over steps)")]
    if step is None:
        return out + ["  a session has no steps: wrap the training loop's body in xlaprof.step(n)\n"]
    for name, key, ci in (("median", "median_us", "median_ci"), ("p90", "p90_us", "p90_ci")):
        c = step[key]
        out.append(f"  {name:<8}{_t(c['before']):>12} -> {_t(c['after']):<12} {_rel(c):>8}  ({_ci(step[ci])})\n")
    out.append(f"  steps   {step['steps']['before']:>12g} -> {step['steps']['after']:g}\n")
    return out


def _idle_lines(data: dict) -> list[str]:
    """Idle by cause per step (when both sessions have steps), per second of window, then the
    window totals (which compare only when the windows hold the same work)."""
    out = []
    per_step = data["per_step"]
    if per_step:
        steps = per_step["steps"]
        out += _cause_table(f"Device time per step ({steps['before']:,.0f} -> {steps['after']:,.0f} steps)", per_step)
    out += _cause_table("Device time per second of window", data["per_second"])
    out += _cause_table("Device time, window totals", data)
    share = data["idle_share"]
    out.append(f"  idle share {100 * share['before']:.1f}% -> {100 * share['after']:.1f}%\n")
    return out


def _cause_table(title: str, figures: dict) -> list[str]:
    """Idle by cause (the largest change first), total idle and busy time: before, after, change."""
    out = [rule(title), f"  {'cause':<22}{'before':>12}{'after':>12}{'change':>13}\n"]
    rows = sorted(figures["idle_by_cause_us"].items(), key=lambda kv: -abs(kv[1]["delta"]))
    for cause, c in rows + [("total idle", figures["device_idle_us"]), ("busy", figures["device_busy_us"])]:
        out.append(f"  {cause:<22}{_t(c['before']):>12}{_t(c['after']):>12}{format_duration_change(c['delta']):>13}\n")
    return out


def _finding_lines(findings: list[dict], top: int) -> list[str]:
    out = [rule("Findings matched (by kind and source line, else span)")]
    for status in ("resolved", "new", "changed"):
        rows = [f for f in findings if f["status"] == status]
        for f in rows[:top]:
            where = (f["span"] or "(no span)") + (f" at {f['source']}" if f["source"] else "")
            lost = f["lost_us"]
            if lost["before"] == 0 and lost["after"] == 0:
                figures = f"count {f['count']['before']:g} -> {f['count']['after']:g}"
            else:
                figures = f"{_t(lost['before'])} -> {_t(lost['after'])} lost ({format_duration_change(lost['delta'])})"
            out.append(f"  {status:<9} [{f['kind']}] {where}: {figures}\n")
        if len(rows) > top:
            out.append(f"  {status:<9} and {len(rows) - top} more\n")
    unchanged = sum(f["status"] == "unchanged" for f in findings)
    if len(out) == 1:
        out.append("  no finding was resolved, is new or changed\n")
    out.append(f"  ({unchanged} unchanged)\n")
    return out


def _worker_lines(data: dict) -> list[str]:
    out = [rule("Workers")]
    for w in data["workers"]:
        name = w["before"] if w["before"] == w["after"] else f"{w['before']} -> {w['after']}"
        step = w["step_time"]
        steps = (f"median step {_t(step['median_us']['before'])} -> {_t(step['median_us']['after'])} "
                 f"{_rel(step['median_us'])} ({_ci(step['median_ci'])})") if step else "no steps"
        idle = w["device_idle_us"]
        out.append(f"  {name}: {steps}; idle {_t(idle['before'])} -> {_t(idle['after'])}\n")
    for side, labels in data["unpaired_workers"].items():
        if labels:
            out.append(f"  only {side}: {', '.join(labels)}\n")
    return out
