"""What the compare page shows of two sessions, read off their diff; no plotting.

Contract:
- ``compare_view(diff)`` returns a ``CompareView``: the verdict (the same line as ``xlaprof
  diff``'s, from ``report.diff_report``: it leads with the per-step change), busy and idle time
  by cause of each session per step (``unit``; per second of window when a session has no steps:
  ms, in ``attribution`` order, busy time first), ``rate_lines`` (the steps each window held, idle
  per step and per second of window), both sessions' per-step times (ms) with shared
  histogram bin edges so their distributions overlay (``step_bins``), the step-time figures (median and p90 with
  their intervals, as text), and one row per matched finding that moved (resolved, new, changed;
  unchanged ones last) for ``grid.table_grid``.
- ``step_bins(values_ms)``: Freedman-Diaconis bins (width ``2 IQR / n^(1/3)``) over the steps
  that are not far outliers (up to the largest step under ``Q3 + OUTLIER_IQR * IQR``), at most ``MAX_BINS`` of them; the
  far outliers (a compile's step among 50 ms steps) are counted in the last bin, whose left edge
  is then ``overflow_ms`` (None when there are none). Without spread (all steps equal, or one),
  one bin around them.
- ``default_pair(runs)``: the runs to compare when the URL names none: the second newest as
  before, the newest as after (``runs`` newest first, as ``list_sessions`` gives them).
- ``parse_pair(search, runs)``: ``?before=RUN&after=RUN`` from a URL; a run the logdir does not
  list is replaced by the default, so a URL can only ever pick listed sessions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dashboard.data.query import query_values
from dashboard.views.axis import AXIS_UNIT_US
from xlaprof.analysis.compare.session_diff import SessionDiff
from xlaprof.report.diff_report import diff_json
from xlaprof.units import format_duration, format_duration_change, format_interval, format_percent_change

MAX_BINS = 60  # bars of each step-time histogram at most
OUTLIER_IQR = 3.0  # steps beyond Q3 + this many IQRs go to the last bin, so they do not widen every bin


@dataclass(frozen=True)
class CompareView:
    before: str  # the session paths
    after: str
    verdict: str
    causes: list[str]  # "busy", then the idle causes
    unit: str  # what before_ms/after_ms are per: "per step", or "per second of window" (a session without steps)
    before_ms: list[float]  # per entry of causes, device time summed over devices, per ``unit``
    after_ms: list[float]
    rate_lines: list[str]  # the steps and windows, and idle per step and per second, before -> after
    step_before_ms: np.ndarray  # per-step times
    step_after_ms: np.ndarray
    bin_edges_ms: np.ndarray  # shared by both histograms (empty without steps)
    overflow_ms: float | None  # steps above this are counted in the last bin (None: none are)
    step_lines: list[str]  # the median and p90 step time, before -> after, with their intervals
    finding_rows: list[dict]


def compare_view(diff: SessionDiff) -> CompareView:
    data = diff_json(diff)
    causes = ["busy", *data["idle_by_cause_us"]]
    rates = data["per_step"] or data["per_second"]
    figures = {"busy": rates["device_busy_us"], **rates["idle_by_cause_us"]}
    step = diff.step_time
    before_ms = step.before_us / AXIS_UNIT_US if step else np.zeros(0)
    after_ms = step.after_us / AXIS_UNIT_US if step else np.zeros(0)
    edges, overflow = step_bins(np.concatenate([before_ms, after_ms]))
    return CompareView(
        data["before"]["session"], data["after"]["session"], data["verdict"], causes,
        "per step" if data["per_step"] else "per second of window",
        [figures[c]["before"] / AXIS_UNIT_US for c in causes], [figures[c]["after"] / AXIS_UNIT_US for c in causes],
        _rate_lines(data), before_ms, after_ms, edges, overflow, _step_lines(data["step_time"]),
        _finding_rows(data["findings"]))


def _rate_lines(data: dict) -> list[str]:
    """How much work each window held, and its idle time per step and per second of window."""
    sides = [data[side] for side in ("before", "after")]
    lines = ["steps: " + " -> ".join(f"{s['steps']:,} in {format_duration(s['window_us'])}" for s in sides)]
    for name, rates in (("per step", data["per_step"]), ("per second of window", data["per_second"])):
        if rates:
            idle = rates["device_idle_us"]
            lines.append(f"device idle {name}: {format_duration(idle['before'])} -> {format_duration(idle['after'])} "
                         f"({format_duration_change(idle['delta'])})")
    return lines


def step_bins(values: np.ndarray) -> tuple[np.ndarray, float | None]:
    if not values.size:
        return np.zeros(0), None
    q1, q3 = np.percentile(values, [25, 75])
    iqr, low, high = q3 - q1, float(values.min()), float(values.max())
    top = float(values[values <= q3 + OUTLIER_IQR * iqr].max())  # the largest step that is no far outlier
    width = 2 * iqr / values.size ** (1 / 3)
    if width <= 0 or top <= low:  # no spread: one bin around the values
        half = max(abs(low) * 0.05, 0.5)
        return np.array([low - half, high + half]), None
    bins = int(np.floor((top - low) / width)) + 1  # the last bin holds ``top`` itself (bins are [a, b))
    if bins > MAX_BINS:
        bins, width = MAX_BINS, (top - low) / (MAX_BINS - 0.5)
    edges = low + width * np.arange(bins + 1)
    if top >= high:
        return edges, None
    # the far outliers get one more bin of the same width, holding every step above the others
    return np.append(edges, edges[-1] + width), float(edges[-1])


def _step_lines(step: dict | None) -> list[str]:
    if step is None:
        return ["A session has no steps: wrap the training loop's body in xlaprof.step(n) to compare step times."]
    lines = []
    for name, key, ci in (("median", "median_us", "median_ci"), ("p90", "p90_us", "p90_ci")):
        c, interval = step[key], step[ci]
        change = format_percent_change(c["relative"]) if c["relative"] is not None else ""
        bounds = format_interval(interval) if interval else "too few steps for an interval"
        lines.append(f"{name} step {format_duration(c['before'])} -> {format_duration(c['after'])} {change} ({bounds})")
    return lines


def _finding_rows(findings: list[dict]) -> list[dict]:
    return [{"id": str(i), "status": f["status"], "kind": f["kind"], "span": f["span"] or "",
             "source": f["source"] or "", "before_ms": round(f["lost_us"]["before"] / AXIS_UNIT_US, 3),
             "after_ms": round(f["lost_us"]["after"] / AXIS_UNIT_US, 3),
             "change_ms": round(f["lost_us"]["delta"] / AXIS_UNIT_US, 3)}
            for i, f in enumerate(findings)]


def default_pair(runs: list[str]) -> tuple[str | None, str | None]:
    if not runs:
        return None, None
    return (runs[1] if len(runs) > 1 else runs[0]), runs[0]


def parse_pair(search: object, runs: list[str]) -> tuple[str | None, str | None]:
    picked = query_values(search if isinstance(search, str) and search.startswith("?") else "", ("before", "after"))
    before, after = (p if p in runs else d for p, d in zip(picked, default_pair(runs)))
    return before, after
