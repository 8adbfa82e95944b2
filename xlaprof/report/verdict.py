"""The one-line answer of ``xlaprof diff``: what the change bought, in the terms of the cause.

Contract: ``verdict(data)`` reads a ``diff_json`` dict and returns one line: the step-time change
with its confidence interval (or that it is within noise), then the idle causes that moved, the
largest change first (at most ``MAX_CAUSES``, each at least ``MIN_SHARE`` of the largest change
and ``MIN_CHANGE_US``), and the finding whose lost time moved most (resolved, new or changed)
told after its own cause's change, e.g. ``step time -22.0% (95% CI -25.1%..-19.0%);
transfer_from_device idle -1.60 s: the read at log_loss (train.py:44) is gone; host_tracing idle
+310.0 ms``. Where nothing moved, ``device idle time unchanged``. When both sessions have steps
(``data["per_step"]``), the causes and the finding are told per step (``host_tracing idle -2.1 ms
per step``; a change is named from ``MIN_STEP_CHANGE_US``), and windows whose step counts differ
by more than ``STEPS_MISMATCH`` are said to (``the windows hold 39 and 2,836 steps, so idle time
is compared per step``): window totals of such windows do not compare.

``session_verdict(data, duration=format_duration)`` is the one-sentence answer of one session that
the text report and the dashboard's session page both open with (the page passes ``format_ms``, the
format of its cards, so one screen never shows a time two ways). It reads the keys ``device_busy_us``, ``device_idle_us``,
``idle_by_cause_us`` and ``findings`` (ranked, as ``json_report.finding_json`` makes them; only the
first finding of the biggest cause is read) and says the idle share, the biggest cause with its
share of the idle time, the line most of it is at (its span and ``file:line``) and the fix
(``fix_of``: the advice's first sentence, or part of one after a colon or semicolon, that starts
with an imperative; else its last sentence, as a ``Note``), e.g. ``The devices were idle 98.0%
of the time (11.45 s of 11.68 s of device time). The biggest cause is host_tracing: 9.10 s, 80% of the idle time,
most of it at train_step (train_mlp.py:42). Fix: move work that ... with torch_xla.compile.``
"""
from __future__ import annotations

import re
from collections.abc import Callable

from xlaprof.analysis.findings.advice import FindingKind
from xlaprof.analysis.host.frames import short_location
from xlaprof.units import (
    format_duration,
    format_duration_change,
    format_interval,
    format_percent_change,
)

# What a finding of each kind is called in a sentence.
NOUNS = {"transfer_from_device": "read", "transfer_to_device": "input transfer", "host_tracing": "host tracing",
         "compile": "compile", "recompilation": "recompilation", "unattributed": "unattributed idle time",
         "capture_edge": "idle time at the capture's edge", "cpu_fallback": "CPU fallback",
         "forced_execution": "forced execution"}


MAX_CAUSES = 3  # idle causes named in a verdict
MIN_SHARE = 0.1  # a cause is named when its change is at least this share of the largest change...
MIN_CHANGE_US = 1000.0  # ...and at least this much (window totals)
MIN_STEP_CHANGE_US = 10.0  # ...or this much per step
STEPS_MISMATCH = 0.10  # windows whose step counts differ by more than this share are said to


def verdict(data: dict) -> str:
    per_step = data.get("per_step")  # both sessions have steps: idle is compared per step
    by_cause = (per_step or data)["idle_by_cause_us"]
    unit, floor = (" per step", MIN_STEP_CHANGE_US) if per_step else ("", MIN_CHANGE_US)
    moved = {cause: c["delta"] for cause, c in by_cause.items()}
    largest = max((abs(d) for d in moved.values()), default=0.0)
    causes = sorted((c for c, d in moved.items() if abs(d) >= max(MIN_SHARE * largest, floor)),
                    key=lambda c: -abs(moved[c]))[:MAX_CAUSES]
    timed = [f for f in data["findings"] if f["status"] != "unchanged" and f["lost_us"]["delta"] != 0]
    steps = (per_step["steps"]["before"], per_step["steps"]["after"]) if per_step else None
    told: dict[str, str] = {}
    if timed:  # the finding whose lost time moved most says what the change did, after its cause
        f = max(timed, key=lambda f: abs(f["lost_us"]["delta"]))
        cause = _cause_of(f["kind"])
        told[cause] = _finding_part(f, steps)
        if cause not in causes:
            causes.append(cause)
    parts = [f"{c} idle {format_duration_change(moved.get(c, 0.0))}{unit}" + (f": {told[c]}" if c in told else "")
             for c in causes]
    return "; ".join([_step_part(data["step_time"]), *_steps_note(steps),
                      *(parts or ["device idle time unchanged"])])


def _steps_note(steps: tuple[float, float] | None) -> list[str]:
    """Said when the two windows hold different numbers of steps (their totals do not compare)."""
    if not steps or min(steps) <= 0 or max(steps) / min(steps) - 1 <= STEPS_MISMATCH:
        return []
    return [f"the windows hold {steps[0]:,.0f} and {steps[1]:,.0f} steps, so idle time is compared per step"]


def _step_part(step: dict | None) -> str:
    if step is None:
        return "no steps to compare (wrap the loop body in xlaprof.step(n))"
    change = format_percent_change(step["median_us"]["relative"] or 0.0)
    if step["median_ci"] is None:
        return f"step time {change} (too few steps for a confidence interval)"
    interval = format_interval(step["median_ci"], step["level"])
    return f"step time {change} ({interval})" if step["significant"] else \
        f"step time unchanged within noise: {change} ({interval})"


def _finding_part(f: dict, steps: tuple[float, float] | None = None) -> str:
    """What happened to a finding: its lost time per step where ``steps`` (before, after) are given."""
    noun, where, lost = NOUNS.get(f["kind"], f["kind"]), _where(f), f["lost_us"]
    before, after, unit = ((lost["before"] / steps[0], lost["after"] / steps[1], " per step") if steps
                           else (lost["before"], lost["after"], ""))
    if f["status"] == "resolved":
        return f"the {noun} {where} is gone"
    if f["status"] == "new":
        return f"a new {noun} {where} costs {format_duration(after)}{unit}"
    return f"the {noun} {where} went from {format_duration(before)} to {format_duration(after)}{unit}"


def _where(f: dict, source: str | None = None) -> str:
    """Where a finding is: ``at span (file:line)``; ``source`` (default: the finding's) names the line."""
    source = f["source"] if source is None else source
    if f["span"] and source:
        return f"at {f['span']} ({source})"
    if source or f["span"]:
        return f"at {source or f['span']}"
    return "outside any span"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# The verbs an advice's fix starts with ("Keep the value on the device ...", "... shape: pad B to ...").
IMPERATIVES = frozenset({"keep", "pad", "bucket", "move", "wrap", "prepare", "replace", "capture", "serve", "run",
                         "create", "compute", "use", "pass", "hand", "avoid", "trace", "read", "start", "install",
                         "turn"})


def session_verdict(data: dict, duration: Callable[[float], str] = format_duration) -> str:
    busy, idle = data["device_busy_us"], data["device_idle_us"]
    if idle <= 0:
        return "The devices were never idle in the analysed window."
    share = idle / (busy + idle)
    out = [f"The devices were idle {100 * share:.1f}% of the time ({duration(idle)} of "
           f"{duration(busy + idle)} of device time)."]
    by_cause = {c: us for c, us in data["idle_by_cause_us"].items() if us > 0}
    if not by_cause:
        return out[0]
    cause = max(by_cause, key=by_cause.get)
    lead = next((f for f in data["findings"] if _cause_of(f["kind"]) == cause and f["lost_us"] > 0), None)
    where = ""
    if lead and (lead["span"] or lead["source"]):
        where = f", most of it {_where(lead, short_location(lead['source']))}"
    out.append(f"The biggest cause is {cause}: {duration(by_cause[cause])}, "
               f"{100 * by_cause[cause] / idle:.0f}% of the idle time{where}.")
    if lead and lead["advice"]:
        fix = fix_of(lead["advice"])
        label = "Fix" if _imperative(fix) else "Note"  # an advice without a fix says what is expected
        out.append(f"{label}: {fix[0].lower()}{fix[1:]}")
    return " ".join(out)


def fix_of(advice: str) -> str:
    """What to do, from an advice: its first sentence, or part of one after a colon or semicolon,
    that starts with an imperative (``IMPERATIVES``), else its last sentence."""
    sentences = _SENTENCE_END.split(advice.strip())
    for sentence in sentences:
        for part in (sentence, *(sentence.partition(mark)[2] for mark in (": ", "; "))):
            if _imperative(part):
                return part
    return sentences[-1]


def _imperative(text: str) -> bool:
    return text.split(" ", 1)[0].lower() in IMPERATIVES


def _cause_of(kind: str) -> str:
    try:
        charged = FindingKind(kind).cause
    except ValueError:
        return kind
    return charged.value if charged else kind
