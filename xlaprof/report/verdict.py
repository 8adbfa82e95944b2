"""The one-line answer of ``xlaprof diff``: what the change bought, in the terms of the cause.

Contract: ``verdict(data)`` reads a ``diff_json`` dict and returns one line: the step-time change
with its confidence interval (or that it is within noise), then the finding whose lost time
moved most (resolved, new or changed) with the change of its idle cause, e.g. ``step time -22.0% (95% CI -25.1%..-19.0%);
transfer_from_device idle -1.60 s: the read at log_loss (train.py:44) is gone``. Where no
finding moved, the idle cause that moved most, if any.
"""
from __future__ import annotations

from xlaprof.analysis.advice import FindingKind
from xlaprof.units import format_duration, format_duration_change, format_interval, format_percent_change

# What a finding of each kind is called in a sentence.
NOUNS = {"transfer_from_device": "read", "transfer_to_device": "input transfer", "host_tracing": "host tracing",
         "compile": "compile", "recompilation": "recompilation", "unattributed": "unattributed idle time",
         "capture_edge": "idle time at the capture's edge", "cpu_fallback": "CPU fallback",
         "forced_execution": "forced execution"}


def verdict(data: dict) -> str:
    parts = [_step_part(data["step_time"])]
    moved = {cause: c["delta"] for cause, c in data["idle_by_cause_us"].items()}
    timed = [f for f in data["findings"] if f["status"] != "unchanged" and f["lost_us"]["delta"] != 0]
    if timed:  # the finding whose lost time moved most says what the change did
        f = max(timed, key=lambda f: abs(f["lost_us"]["delta"]))
        charged = FindingKind(f["kind"]).cause
        cause = charged.value if charged else f["kind"]
        parts.append(f"{cause} idle {format_duration_change(moved.get(cause, 0.0))}: {_finding_part(f)}")
    else:
        cause = max(moved, key=lambda k: abs(moved[k]))
        parts.append(f"{cause} idle {format_duration_change(moved[cause])}" if moved[cause]
                     else "device idle time unchanged")
    return "; ".join(parts)


def _step_part(step: dict | None) -> str:
    if step is None:
        return "no steps to compare (wrap the loop body in xlaprof.step(n))"
    change = format_percent_change(step["median_us"]["relative"] or 0.0)
    if step["median_ci"] is None:
        return f"step time {change} (too few steps for a confidence interval)"
    interval = format_interval(step["median_ci"], step["level"])
    return f"step time {change} ({interval})" if step["significant"] else \
        f"step time unchanged within noise: {change} ({interval})"


def _finding_part(f: dict) -> str:
    noun, where, lost = NOUNS.get(f["kind"], f["kind"]), _where(f), f["lost_us"]
    if f["status"] == "resolved":
        return f"the {noun} {where} is gone"
    if f["status"] == "new":
        return f"a new {noun} {where} costs {format_duration(lost['after'])}"
    return f"the {noun} {where} went from {format_duration(lost['before'])} to {format_duration(lost['after'])}"


def _where(f: dict) -> str:
    if f["span"] and f["source"]:
        return f"at {f['span']} ({f['source']})"
    if f["source"] or f["span"]:
        return f"at {f['source'] or f['span']}"
    return "outside any span"
