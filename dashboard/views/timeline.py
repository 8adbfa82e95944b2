"""Timeline lanes of an analysed session, and what to draw of them for a visible time range.

Contract:
- ``session_timeline(analysis)`` builds a ``SessionTimeline`` once per analysis (cache it): lanes
  in display order, per worker one per device (its executions, ``BUSY``, and its idle pieces
  coloured by cause) then host lanes with events named by their cause (``host: compile``,
  ``host: transfer_from_device``: blocking reads with the barrier wait before them,
  ``host: transfer_to_device``), and user spans, one lane per thread and
  nesting depth: ``training thread · spans depth 0`` for the analysis' main line, the capture's
  thread name (e.g. ``pt_autograd_0 · spans depth 0``) for other threads). Times are
  microseconds on one axis for all workers: each worker's clock is shifted by its ``origin_ns``
  relative to the earliest worker's (``worker_offsets``). Each idle item keeps its gap id (the
  numbering of ``axis.first_gap_ids``, as in ``gap_table``) and its hover names the piece's place
  (``WorkerAnalysis.piece_place``: the Python line of its stack, else its span's).
- ``only_gaps(timeline, keep)``: the same lanes with only the idle items whose gap id ``keep``
  (bool per gap id) keeps, e.g. the gaps under a flame graph frame; the rest is unchanged.
- ``only_workers(timeline, workers)``: the same timeline with only the lanes of the workers labelled
  ``workers`` (a pod's timeline shows a few workers at a time); its extent stays the session's.
- ``view(timeline, x0, x1, config)`` returns the ``TimelineView`` to draw for ``[x0, x1]`` (us).
  A lane with at most ``config.max_raw`` items in the range is drawn item by item, each with a
  hover text (name, span, source, duration), a span item with its name as its ``text`` (drawn on
  the bar where it fits, as XProf labels its slices). A busier lane is aggregated into ``config.bins``
  bins: each run of bins sharing a dominant category becomes one bar, its opacity the share of
  the bin covered, its hover the number of items and the coverage. Whatever the capture size the
  view holds at most lanes * max(max_raw, bins) bars; zooming in asks again and gets detail.
- ``parse_relayout`` and ``parse_range_query`` turn a Plotly relayout event or a URL query into
  a range; both accept anything (malformed input gives ``None``, never an exception).
- Categories (``CATEGORIES``): the codes of ``attribution.CAUSES`` (idle time, and the host events
  that are those causes), then ``busy`` (device execution) and ``span`` (user spans).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dashboard.data.query import query_values
from dashboard.views.axis import AXIS_UNIT_US, first_gap_ids, worker_offsets
from xlaprof.analysis import SessionAnalysis, WorkerAnalysis
from xlaprof.analysis.common import intervals
from xlaprof.analysis.host.host_activity import EventSet
from xlaprof.analysis.idle.attribution import CAUSES, CODE, Cause
from xlaprof.units import format_duration

BUSY = len(CAUSES)
SPAN = BUSY + 1
CATEGORIES: tuple[str, ...] = tuple(c.value for c in CAUSES) + ("busy", "span")
MAX_SPAN_LANES = 3  # per thread: spans nested deeper share the thread's last span lane
TRAINING_THREAD = "training thread"
MIN_RANGE_US = 0.01  # the narrowest range a view is asked for: 10 ns


@dataclass(frozen=True)
class ViewConfig:
    max_raw: int = 1500  # items of one lane drawn one by one; above this the lane is binned
    bins: int = 600  # bins across the visible range for a binned lane


@dataclass
class Lane:
    """One row of the timeline: columnar items sorted by start."""

    label: str
    start: np.ndarray  # float64 us on the session axis
    end: np.ndarray  # float64 us
    reach: np.ndarray  # float64: max end of items 0..i, to find the items overlapping a range
    category: np.ndarray  # int8: index into CATEGORIES
    name: np.ndarray  # int32: index into names; -1 for idle pieces (the category names the cause)
    span: np.ndarray  # int64: index into the worker's SpanIndex, -1 where none
    gap: np.ndarray  # int64: an idle item's gap id (gap_table's numbering), -1 for other items
    names: list[str]
    worker: WorkerAnalysis
    first_gap: int  # the gap id of the worker's first piece: gap - first_gap indexes its pieces
    coverage: dict[int, tuple[np.ndarray, np.ndarray]]  # category -> merged (starts, ends)


@dataclass
class SessionTimeline:
    lanes: list[Lane]
    extent: tuple[float, float]  # us: the union of the workers' analysed windows


@dataclass
class TimelineView:
    """Bars to draw, columnar; ``lane`` indexes ``labels`` (all lanes, empty ones included)."""

    x0: float
    x1: float
    labels: list[str]
    lane: np.ndarray  # int32
    start: np.ndarray  # float64 us
    end: np.ndarray  # float64 us
    category: np.ndarray  # int8
    opacity: np.ndarray  # float64, 1.0 for items drawn one by one
    hover: list[str]
    binned_lanes: int  # how many lanes were aggregated at this zoom
    text: list[str] = field(default_factory=list)  # per bar: a span item's name, drawn on it where it fits; else ""

    def __len__(self) -> int:
        return int(self.start.size)


def session_timeline(analysis: SessionAnalysis) -> SessionTimeline:
    lanes: list[Lane] = []
    offsets = worker_offsets(analysis)
    prefix = len(analysis.workers) > 1
    for w, offset, first_gap in zip(analysis.workers, offsets, first_gap_ids(analysis)):
        tag = f"{w.worker.label} " if prefix else ""
        for d, device in enumerate(w.devices):
            ev = device.plane.events
            mine = w.pieces.device == d
            gap = np.concatenate((np.full(device.rows.size, -1, np.int64), first_gap + np.flatnonzero(mine)))
            starts = np.concatenate((ev.start_us[device.rows], w.pieces.start_us[mine]))
            ends = np.concatenate((ev.start_us[device.rows] + ev.dur_us[device.rows],
                                   w.pieces.start_us[mine] + w.pieces.dur_us[mine]))
            category = np.concatenate((np.full(device.rows.size, BUSY, np.int8), w.pieces.cause[mine]))
            name = np.concatenate((ev.name[device.rows], np.full(int(mine.sum()), -1, np.int32)))
            span = np.concatenate((np.full(device.rows.size, -1, np.int64), w.pieces.span[mine]))
            lanes.append(_lane(f"{tag}{device.name}", starts + offset, ends + offset, category, name, span, gap,
                               device.plane.names, w, first_gap))
        host = w.host
        names = host.plane.names if host.plane is not None else []
        for events, cause in ((host.compiles, Cause.COMPILE), (host.transfers_from_device, Cause.TRANSFER_FROM_DEVICE),
                              (host.transfers_to_device, Cause.TRANSFER_TO_DEVICE)):
            if len(events):  # a host lane is named by the cause its events are charged to
                lanes.append(_host_lane(f"{tag}host: {cause.value}", events, CODE[cause], names, w, offset))
        lanes += _span_lanes(tag, w, offset)
    extent = (min((w.window[0] + o for w, o in zip(analysis.workers, offsets)), default=0.0),
              max((w.window[1] + o for w, o in zip(analysis.workers, offsets)), default=1.0))
    return SessionTimeline(lanes, extent)


def _lane(label: str, start: np.ndarray, end: np.ndarray, category: np.ndarray, name: np.ndarray,
          span: np.ndarray, gap: np.ndarray | None, names: list[str], worker: WorkerAnalysis,
          first_gap: int = 0) -> Lane:
    order = np.argsort(start, kind="stable")
    start, end, category = start[order], end[order], category[order].astype(np.int8)
    reach = np.maximum.accumulate(end) if end.size else end
    coverage = {int(c): intervals.merge(start[category == c], end[category == c]) for c in np.unique(category)}
    gap = gap[order] if gap is not None else np.full(start.size, -1, np.int64)
    return Lane(label, start, end, reach, category, name[order].astype(np.int32), span[order], gap, names,
                worker, first_gap, coverage)


def only_gaps(timeline: SessionTimeline, keep: np.ndarray) -> SessionTimeline:
    lanes = []
    for lane in timeline.lanes:
        has_gap = lane.gap >= 0
        drop = np.zeros(has_gap.size, bool)
        drop[has_gap] = ~keep[lane.gap[has_gap]]
        if not drop.any():
            lanes.append(lane)
            continue
        k = ~drop
        lanes.append(_lane(lane.label, lane.start[k], lane.end[k], lane.category[k], lane.name[k], lane.span[k],
                           lane.gap[k], lane.names, lane.worker, lane.first_gap))
    return SessionTimeline(lanes, timeline.extent)


def only_workers(timeline: SessionTimeline, workers: list[str]) -> SessionTimeline:
    wanted = set(workers)
    return SessionTimeline([lane for lane in timeline.lanes if lane.worker.worker.label in wanted], timeline.extent)


def _host_lane(label: str, events: EventSet, code: int, names: list[str], w: WorkerAnalysis,
               offset: float) -> Lane:
    ev = w.host.plane.events
    span = np.array([w.host.span_at(int(events.line[i]), float(events.start[i])) for i in range(len(events))],
                    np.int64)
    return _lane(label, events.start + offset, events.end + offset, np.full(len(events), code, np.int8),
                 ev.name[events.rows], span, None, names, w)


def _span_lanes(tag: str, w: WorkerAnalysis, offset: float) -> list[Lane]:
    """One lane per (thread, nesting depth) of user spans, the training thread first."""
    spans = w.host.spans
    if not len(spans):
        return []
    depth = np.zeros(len(spans), np.int64)
    # Parents come before their children, so each pass settles one more level of nesting.
    for _ in range(MAX_SPAN_LANES):
        depth = np.where(spans.parent >= 0, depth[np.maximum(spans.parent, 0)] + 1, 0)
    depth = np.minimum(depth, MAX_SPAN_LANES - 1)
    index = np.arange(len(spans), dtype=np.int64)
    lines = sorted(np.unique(spans.line).tolist(), key=lambda line: (line != w.host.main_line, line))
    lanes = []
    for line in lines:
        thread = thread_name(w, line)
        for level in np.unique(depth[spans.line == line]):
            pick = (spans.line == line) & (depth == level)
            lanes.append(_lane(f"{tag}{thread} · spans depth {int(level)}", spans.start[pick] + offset,
                               spans.end[pick] + offset, np.full(int(pick.sum()), SPAN, np.int8), index[pick],
                               index[pick], None, spans.name, w))
    return lanes


def thread_name(w: WorkerAnalysis, line: int) -> str:
    """What a person calls a host line: the training thread (the analysis' main line, where user
    spans cover the most time), else the thread's name in the capture."""
    if line == w.host.main_line:
        return TRAINING_THREAD
    plane = w.host.plane
    found = plane.lines[line] if plane is not None and 0 <= line < len(plane.lines) else None
    if found is None:
        return f"thread {line}"
    return found.display_name or found.name or f"thread {found.id}"


def view(timeline: SessionTimeline, x0: float | None = None, x1: float | None = None,
         config: ViewConfig = ViewConfig()) -> TimelineView:
    x0, x1 = clamp_range(timeline, x0, x1)
    parts: list[tuple] = []
    binned = 0
    for k, lane in enumerate(timeline.lanes):
        lo = int(np.searchsorted(lane.reach, x0, side="right"))
        hi = int(np.searchsorted(lane.start, x1, side="left"))
        if hi - lo > config.max_raw:
            binned += 1
            parts.append(_binned(k, lane, x0, x1, config.bins))
        else:
            idx = np.arange(lo, max(lo, hi))
            idx = idx[lane.end[idx] > x0]
            parts.append((np.full(idx.size, k, np.int32), lane.start[idx], lane.end[idx], lane.category[idx],
                          np.ones(idx.size), [_hover(lane, int(i)) for i in idx],
                          [lane.names[lane.name[i]] if lane.category[i] == SPAN else "" for i in idx]))
    columns = list(zip(*parts)) if parts else [[]] * 7
    cat = lambda arrays, dtype: np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)
    flat = lambda lists: [item for items in lists for item in items]  # noqa: E731
    return TimelineView(x0, x1, [lane.label for lane in timeline.lanes], cat(columns[0], np.int32),
                        cat(columns[1], np.float64), cat(columns[2], np.float64), cat(columns[3], np.int8),
                        cat(columns[4], np.float64), flat(columns[5]), binned, flat(columns[6]))


def clamp_range(timeline: SessionTimeline, x0: float | None, x1: float | None) -> tuple[float, float]:
    """``[x0, x1]`` kept inside the session (with a margin), never empty; the extent by default."""
    lo, hi = timeline.extent
    margin = 0.05 * max(hi - lo, MIN_RANGE_US)
    if x0 is None or x1 is None or not (math.isfinite(x0) and math.isfinite(x1)) or x1 <= x0:
        return lo, hi
    x0, x1 = max(x0, lo - margin), min(x1, hi + margin)
    if x1 - x0 < MIN_RANGE_US:
        mid = min(max((x0 + x1) / 2, lo), hi)
        x0, x1 = mid - MIN_RANGE_US / 2, mid + MIN_RANGE_US / 2
    return x0, x1


def _binned(k: int, lane: Lane, x0: float, x1: float, bins: int) -> tuple:
    edges = np.linspace(x0, x1, bins + 1)
    cats = sorted(lane.coverage)
    cover = np.stack([np.diff(intervals.measure_before(*lane.coverage[c], edges)) for c in cats])
    width = edges[1] - edges[0]
    dominant = np.asarray(cats, np.int8)[np.argmax(cover, axis=0)]
    share = np.clip(cover.max(axis=0) / width, 0.0, 1.0)
    # Opacity in four steps, so that neighbouring bins of similar coverage merge into one bar.
    level = np.ceil(share * 4) / 4
    drawn = level > 0
    new_run = np.ones(bins, bool)
    new_run[1:] = (dominant[1:] != dominant[:-1]) | (level[1:] != level[:-1]) | ~drawn[:-1]
    starts_run = new_run & drawn
    first = np.flatnonzero(starts_run)
    run_of_bin = np.cumsum(starts_run) - 1
    last = np.zeros(first.size, np.int64)
    np.maximum.at(last, run_of_bin[drawn], np.flatnonzero(drawn))
    s, e = edges[first], edges[last + 1]
    counts = np.searchsorted(lane.start, e, side="left") - np.searchsorted(lane.reach, s, side="right")
    hover = [f"{lane.label}: {int(n)} items in {format_duration(b - a)}<br>mostly {CATEGORIES[c]}, "
             f"up to {level[f]:.0%} covered<br>zoom in for detail"
             for n, a, b, c, f in zip(counts, s, e, dominant[first], first)]
    return (np.full(first.size, k, np.int32), s, e, dominant[first], np.maximum(level[first], 0.35), hover,
            [""] * first.size)


def _hover(lane: Lane, i: int) -> str:
    n = int(lane.name[i])
    title = lane.names[n] if n >= 0 else f"idle: {CATEGORIES[lane.category[i]]}"
    gap = int(lane.gap[i])
    if gap >= 0:
        span, source, _ = lane.worker.piece_place(gap - lane.first_gap)
    else:
        span, source = lane.worker.host.spans.label(int(lane.span[i]))
    lines = [title]
    if span is not None and lane.category[i] != SPAN:
        lines.append(f"span: {span}")
    if source:
        lines.append(f"source: {source}")
    lines.append(f"duration: {format_duration(float(lane.end[i] - lane.start[i]))}")
    return "<br>".join(lines)


def parse_relayout(relayout: object, unit_us: float = AXIS_UNIT_US) -> tuple[float, float] | str | None:
    """``(x0, x1)`` in us for a zoom or pan, ``"reset"`` for autorange, ``None`` for anything else."""
    if not isinstance(relayout, dict):
        return None
    if relayout.get("xaxis.autorange") is True:
        return "reset"
    pair = relayout.get("xaxis.range")
    if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
        pair = (relayout.get("xaxis.range[0]"), relayout.get("xaxis.range[1]"))
    lo, hi = (_number(v) for v in pair)
    if lo is None or hi is None or hi <= lo:
        return None
    return lo * unit_us, hi * unit_us


def parse_range_query(search: object, unit_us: float = AXIS_UNIT_US) -> tuple[float, float] | None:
    """The ``?from_ms=..&to_ms=..`` of a session URL, in us; ``None`` when absent or malformed."""
    lo, hi = (_number(v) for v in query_values(search, ("from_ms", "to_ms")))
    if lo is None or hi is None or hi <= lo:
        return None
    return lo * unit_us, hi * unit_us


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
