"""The gaps table: every idle piece of a session, filtered, sorted and paged on the server.

Contract:
- ``gap_columns(analysis)`` gathers the idle pieces of all workers into ``GapColumns``, columnar,
  with start times on the session axis of ``timeline_view`` (workers aligned), labels interned.
  Build it once per analysis: a large capture has hundreds of thousands of pieces.
- ``gap_page(gaps, request)`` answers one ``getRowsRequest`` of AG Grid's infinite row model
  (the grid pages, sorts and filters on the server): rows ``startRow`` to ``endRow`` (at most
  ``MAX_BLOCK``) of the gaps that pass ``filterModel``, ordered by ``sortModel``, and how many
  pass (the grid's row count). ``filterModel`` maps a column to AG Grid's text or number filter
  model (``{"filterType", "type", "filter", "filterTo"}``, or ``{"operator": "AND"|"OR",
  "conditions": [...]}``); text matches are case-insensitive; ``sortModel`` is a list of
  ``{"colId", "sort"}``, primary first. Nothing a client sends makes it raise: a filter it cannot
  read keeps every row and is named in ``GapPage.problem``; bad row numbers fall back to the first.
- ``gap_mask(gaps, filter_model)``: the gaps that pass an AG Grid ``filterModel`` (bool per gap id),
  and what of it was ignored: the one filter the grid and the timeline share.
- ``gap_range(gaps, gap_id)`` is the time range (us) that frames one gap, ``None`` for a bad id;
  ``gap_piece(gaps, gap_id)`` is (worker index, piece index) of a gap, ``None`` for a bad id.
Gap ids count the pieces of the workers in order (worker 0's ``pieces`` first), as
``timeline.session_timeline`` numbers its idle items.
Columns (``COLUMNS``): id, worker, device, start_ms, dur_ms, cause, span, source, stack. ``span``,
``source`` and ``stack`` are ``WorkerAnalysis.piece_place``: the source is the Python line of the
piece's sampled stack, else its span's line; ``stack`` is the stack's frames from the outermost
down to that line ("file:line function", joined by newlines; empty without a stack). The grid
hides ``stack`` but filters on it (``flame.frame_filter``: the gaps under a flame graph frame).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dashboard.views.axis import AXIS_UNIT_US, first_gap_ids, worker_offsets
from xlaprof.analysis import SessionAnalysis, WorkerAnalysis
from xlaprof.analysis.idle.attribution import CAUSES

PLACE_COLUMNS = ("worker", "device", "span", "source", "stack")  # interned text columns
COLUMNS = ("id", "worker", "device", "start_ms", "dur_ms", "cause", "span", "source", "stack")
NUMERIC = {"start_ms", "dur_ms"}
# A gap is framed with this much of its surroundings on each side (times its duration, at least 20 us).
FRAME = 1.0
DEFAULT_BLOCK = 100  # rows when a request names no end
MAX_BLOCK = 500  # the most rows one request gets
MAX_CONDITIONS = 8  # conditions read per column filter
MAX_NEEDLE = 500  # characters of a text filter value


@dataclass
class GapColumns:
    start_us: np.ndarray  # float64, session axis
    dur_us: np.ndarray  # float64
    labels: dict[str, tuple[np.ndarray, list[str]]]  # text column -> (int32 ids, interned labels)
    worker_start: np.ndarray  # int64: per worker, the id of its first gap

    def __len__(self) -> int:
        return int(self.start_us.size)


@dataclass
class GapPage:
    rows: list[dict]  # the requested block, each row a dict of COLUMNS
    matching: int  # rows that pass the filter: the grid's row count
    problem: str | None = None  # what of the request was ignored, for the person


class _Interner:
    def __init__(self) -> None:
        self._ids: dict[str, int] = {"": 0}  # id 0: none

    def ids(self, values: list[str | None]) -> np.ndarray:
        return np.array([self._ids.setdefault(v or "", len(self._ids)) for v in values], np.int32)

    def finish(self) -> list[str]:
        return list(self._ids)  # in id order: ids are handed out in insertion order


def gap_columns(analysis: SessionAnalysis) -> GapColumns:
    text = {col: _Interner() for col in PLACE_COLUMNS}
    parts: dict[str, list[np.ndarray]] = {col: [] for col in ("start", "dur", "cause", *PLACE_COLUMNS)}
    for w, offset in zip(analysis.workers, worker_offsets(analysis)):
        p = w.pieces
        parts["start"].append(p.start_us + offset)
        parts["dur"].append(p.dur_us)
        parts["worker"].append(np.full(len(p), text["worker"].ids([w.worker.label])[0], np.int32))
        parts["device"].append(text["device"].ids([d.name for d in w.devices])[p.device] if len(p)
                               else np.zeros(0, np.int32))
        parts["cause"].append(p.cause.astype(np.int32))
        for col, ids in _place_ids(w, text).items():
            parts[col].append(ids)
    joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    labels = {col: (joined[col].astype(np.int32), text[col].finish()) for col in text}
    labels["cause"] = (joined["cause"].astype(np.int32), [c.value for c in CAUSES])
    starts = np.array(first_gap_ids(analysis), np.int64)
    return GapColumns(joined["start"].astype(np.float64), joined["dur"].astype(np.float64), labels, starts)


def _place_ids(w: WorkerAnalysis, text: dict[str, _Interner]) -> dict[str, np.ndarray]:
    """Label ids of each piece's span, source and stack, asking ``piece_place`` once per distinct
    (span, stack) pair: a large capture has few of those and many pieces."""
    p = w.pieces
    if not len(p):
        return {col: np.zeros(0, np.int32) for col in ("span", "source", "stack")}
    _, first, inverse = np.unique(np.stack((p.span, p.stack), axis=1), axis=0, return_index=True,
                                      return_inverse=True)
    places = [w.piece_place(int(i)) for i in first]
    inverse = inverse.reshape(-1)
    return {"span": text["span"].ids([span for span, _, _ in places])[inverse],
            "source": text["source"].ids([source for _, source, _ in places])[inverse],
            "stack": text["stack"].ids(["\n".join(stack) for _, _, stack in places])[inverse]}


def gap_page(gaps: GapColumns, request: object = None) -> GapPage:
    """One block of rows for AG Grid's infinite row model: ``request`` is its ``getRowsRequest``
    (``startRow``, ``endRow``, ``sortModel``, ``filterModel``); anything else means the first rows."""
    request = request if isinstance(request, dict) else {}
    mask, problems = gap_mask(gaps, request.get("filterModel"))
    picked = np.flatnonzero(mask)
    picked = picked[_order(gaps, picked, request.get("sortModel"))]
    start = min(max(_int(request.get("startRow"), 0), 0), picked.size)
    end = _int(request.get("endRow"), start + DEFAULT_BLOCK)
    end = min(max(end, start + 1), start + MAX_BLOCK)
    rows = [_row(gaps, int(i)) for i in picked[start:end]]
    return GapPage(rows, int(picked.size), "; ".join(problems) or None)


def gap_range(gaps: GapColumns, gap_id: object) -> tuple[float, float] | None:
    i = _int(gap_id, -1)
    if not 0 <= i < len(gaps):
        return None
    start, dur = float(gaps.start_us[i]), float(gaps.dur_us[i])
    pad = max(dur * FRAME, 20.0)
    return start - pad, start + dur + pad


def gap_piece(gaps: GapColumns, gap_id: object) -> tuple[int, int] | None:
    i = _int(gap_id, -1)
    if not 0 <= i < len(gaps):
        return None
    worker = int(np.searchsorted(gaps.worker_start, i, side="right")) - 1
    return worker, i - int(gaps.worker_start[worker])


def _row(gaps: GapColumns, i: int) -> dict:
    row = {"id": str(i), "start_ms": round(float(gaps.start_us[i]) / AXIS_UNIT_US, 4),
           "dur_ms": round(float(gaps.dur_us[i]) / AXIS_UNIT_US, 4)}
    for col, (ids, labels) in gaps.labels.items():
        row[col] = labels[ids[i]]
    return row


def _numeric(gaps: GapColumns, col: str) -> np.ndarray:
    return (gaps.start_us if col == "start_ms" else gaps.dur_us) / AXIS_UNIT_US


def gap_mask(gaps: GapColumns, model: object) -> tuple[np.ndarray, list[str]]:
    mask = np.ones(len(gaps), bool)
    problems: list[str] = []
    if not isinstance(model, dict):
        return mask, problems
    for col, spec in list(model.items())[:len(COLUMNS)]:
        if col not in NUMERIC and col not in gaps.labels:
            problems.append(f"ignored the filter on unknown column '{str(col)[:40]}'")
            continue
        picked = _combined(gaps, col, spec)
        if isinstance(picked, str):
            problems.append(f"ignored the filter on {col}: {picked}")
        else:
            mask &= picked
    return mask, problems


def _combined(gaps: GapColumns, col: str, spec: object) -> np.ndarray | str:
    """The rows one column's filter keeps: one condition, or several joined by AND/OR."""
    if not isinstance(spec, dict):
        return "not a filter"
    if "conditions" not in spec:
        return _condition(gaps, col, spec)
    conditions, operator = spec.get("conditions"), spec.get("operator", "AND")
    if not isinstance(conditions, list) or not conditions or operator not in ("AND", "OR"):
        return "needs conditions joined by AND or OR"
    parts = [_condition(gaps, col, c) for c in conditions[:MAX_CONDITIONS]]
    bad = [p for p in parts if isinstance(p, str)]
    if bad:
        return bad[0]
    return np.logical_and.reduce(parts) if operator == "AND" else np.logical_or.reduce(parts)


def _condition(gaps: GapColumns, col: str, spec: object) -> np.ndarray | str:
    if not isinstance(spec, dict):
        return "not a filter condition"
    kind = spec.get("type") if isinstance(spec.get("type"), str) else None
    if col in NUMERIC:
        data = _numeric(gaps, col)
        if kind in ("blank", "notBlank"):  # a duration or a start is never blank
            return np.full(data.size, kind == "notBlank")
        test = _NUMBER_TESTS.get(kind)
        low, high = _float(spec.get("filter")), _float(spec.get("filterTo"))
        if test is None or low is None or (kind == "inRange" and high is None):
            return f"'{str(kind)[:30]}' needs a known comparison and a number"
        return test(data, low, high)
    ids, labels = gaps.labels[col]
    if kind in ("blank", "notBlank"):
        return (ids == 0) if kind == "blank" else (ids != 0)  # id 0 is the empty label
    test = _TEXT_TESTS.get(kind)
    value = spec.get("filter")
    if test is None or not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return f"'{str(kind)[:30]}' needs a known text comparison and a value"
    needle = str(value)[:MAX_NEEDLE].lower()
    keep = np.array([test(s.lower(), needle) for s in labels], bool)
    return keep[ids]


_NUMBER_TESTS = {
    "equals": lambda d, a, b: d == a, "notEqual": lambda d, a, b: d != a,
    "lessThan": lambda d, a, b: d < a, "lessThanOrEqual": lambda d, a, b: d <= a,
    "greaterThan": lambda d, a, b: d > a, "greaterThanOrEqual": lambda d, a, b: d >= a,
    "inRange": lambda d, a, b: (d >= min(a, b)) & (d <= max(a, b)),
}
_TEXT_TESTS = {
    "contains": lambda s, n: n in s, "notContains": lambda s, n: n not in s,
    "equals": lambda s, n: s == n, "notEqual": lambda s, n: s != n,
    "startsWith": lambda s, n: s.startswith(n), "endsWith": lambda s, n: s.endswith(n),
}


def _order(gaps: GapColumns, picked: np.ndarray, sort_model: object) -> np.ndarray:
    keys = []
    for spec in sort_model[:len(COLUMNS)] if isinstance(sort_model, list) else []:
        col = spec.get("colId") if isinstance(spec, dict) else None
        if not isinstance(col, str):
            continue
        if col in NUMERIC:
            key = _numeric(gaps, col)[picked]
        elif col in gaps.labels:
            ids, labels = gaps.labels[col]
            rank = np.empty(len(labels), np.int64)
            rank[np.argsort(np.array(labels, dtype=object), kind="stable")] = np.arange(len(labels))
            key = rank[ids[picked]]
        elif col == "id":
            key = picked
        else:
            continue
        keys.append(-key if spec.get("sort") == "desc" else key)
    if not keys:
        return np.arange(picked.size)
    # lexsort's last key is the primary one; the grid lists its primary sort first.
    return np.lexsort(keys[::-1])


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if np.isfinite(number) else None
