"""The gaps table: every idle piece of a session, filtered, sorted and paged on the server.

Contract:
- ``gap_columns(analysis)`` gathers the idle pieces of all workers into ``GapColumns``, columnar,
  with start times on the session axis of ``timeline_view`` (workers aligned), labels interned.
  Build it once per analysis: a large capture has hundreds of thousands of pieces.
- ``gap_page(gaps, filter_query, sort_by, page, page_size)`` answers one request of a table that
  pages, sorts and filters on the server (Dash DataTable's ``custom`` actions). ``filter_query``
  is DataTable's syntax (``{cause} contains "compile" && {dur_ms} > 5``); ``sort_by`` its list of
  ``{"column_id", "direction"}``. Nothing a client sends makes it raise: a clause it cannot read
  is skipped and named in ``GapPage.problem``.
- ``gap_range(gaps, gap_id)`` is the time range (us) that frames one gap, ``None`` for a bad id.
Columns (``COLUMNS``): id, worker, device, start_ms, dur_ms, cause, span, source.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from dashboard.views.axis import AXIS_UNIT_US, worker_offsets
from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.attribution import CAUSES

COLUMNS = ("id", "worker", "device", "start_ms", "dur_ms", "cause", "span", "source")
NUMERIC = {"start_ms", "dur_ms"}
MAX_PAGE_SIZE = 500
# A gap is framed with this much of its surroundings on each side (times its duration, at least 20 us).
FRAME = 1.0
_CLAUSE = re.compile(r"^\{(?P<col>[a-z_]+)\}\s*(?P<op>[si]?(?:contains|eq|ne|lt|le|gt|ge|!=|<=|>=|=|<|>))\s*"
                     r"(?P<value>.*)$")
_OPS = {"=": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


@dataclass
class GapColumns:
    start_us: np.ndarray  # float64, session axis
    dur_us: np.ndarray  # float64
    labels: dict[str, tuple[np.ndarray, list[str]]]  # text column -> (int32 ids, interned labels)

    def __len__(self) -> int:
        return int(self.start_us.size)


@dataclass
class GapPage:
    rows: list[dict]
    page_count: int
    matching: int
    problem: str | None = None


class _Interner:
    def __init__(self) -> None:
        self._ids: dict[str, int] = {"": 0}  # id 0: none

    def ids(self, values: list[str | None]) -> np.ndarray:
        return np.array([self._ids.setdefault(v or "", len(self._ids)) for v in values], np.int32)

    def finish(self) -> list[str]:
        return list(self._ids)  # in id order: ids are handed out in insertion order


def gap_columns(analysis: SessionAnalysis) -> GapColumns:
    text = {col: _Interner() for col in ("worker", "device", "span", "source")}
    parts: dict[str, list[np.ndarray]] = {col: [] for col in ("start", "dur", "worker", "device", "cause",
                                                             "span", "source")}
    for w, offset in zip(analysis.workers, worker_offsets(analysis)):
        p = w.pieces
        spans = w.host.spans
        # Label ids per span of the worker's SpanIndex, with one extra entry for "no span" (-1).
        span_ids = np.append(text["span"].ids(spans.name), 0)
        source_ids = np.append(text["source"].ids(spans.source), 0)
        device_ids = text["device"].ids([d.name for d in w.devices])
        parts["start"].append(p.start_us + offset)
        parts["dur"].append(p.dur_us)
        parts["worker"].append(np.full(len(p), text["worker"].ids([w.worker.label])[0], np.int32))
        parts["device"].append(device_ids[p.device] if len(p) else np.zeros(0, np.int32))
        parts["cause"].append(p.cause.astype(np.int32))
        parts["span"].append(span_ids[p.span])
        parts["source"].append(source_ids[p.span])
    joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    labels = {col: (joined[col].astype(np.int32), text[col].finish()) for col in text}
    labels["cause"] = (joined["cause"].astype(np.int32), [c.value for c in CAUSES])
    return GapColumns(joined["start"].astype(np.float64), joined["dur"].astype(np.float64), labels)


def gap_page(gaps: GapColumns, filter_query: object = "", sort_by: object = None, page: object = 0,
             page_size: object = 25) -> GapPage:
    mask, problems = _filter(gaps, filter_query)
    picked = np.flatnonzero(mask)
    picked = picked[_order(gaps, picked, sort_by)]
    size = min(max(_int(page_size, 25), 1), MAX_PAGE_SIZE)
    pages = max(1, -(-picked.size // size))
    current = min(max(_int(page, 0), 0), pages - 1)
    rows = [_row(gaps, int(i)) for i in picked[current * size:(current + 1) * size]]
    return GapPage(rows, pages, int(picked.size), "; ".join(problems) or None)


def gap_range(gaps: GapColumns, gap_id: object) -> tuple[float, float] | None:
    i = _int(gap_id, -1)
    if not 0 <= i < len(gaps):
        return None
    start, dur = float(gaps.start_us[i]), float(gaps.dur_us[i])
    pad = max(dur * FRAME, 20.0)
    return start - pad, start + dur + pad


def _row(gaps: GapColumns, i: int) -> dict:
    row = {"id": i, "start_ms": round(float(gaps.start_us[i]) / AXIS_UNIT_US, 4),
           "dur_ms": round(float(gaps.dur_us[i]) / AXIS_UNIT_US, 4)}
    for col, (ids, labels) in gaps.labels.items():
        row[col] = labels[ids[i]]
    return row


def _numeric(gaps: GapColumns, col: str) -> np.ndarray:
    return (gaps.start_us if col == "start_ms" else gaps.dur_us) / AXIS_UNIT_US


def _filter(gaps: GapColumns, query: object) -> tuple[np.ndarray, list[str]]:
    mask = np.ones(len(gaps), bool)
    problems: list[str] = []
    if not isinstance(query, str) or not query.strip():
        return mask, problems
    for clause in query[:2000].split("&&"):
        match = _CLAUSE.match(clause.strip())
        col = match.group("col") if match else None
        if match is None or (col not in NUMERIC and col not in gaps.labels):
            problems.append(f"ignored filter '{clause.strip()[:60]}'")
            continue
        op = match.group("op").lstrip("si")  # case prefixes: matching is case-insensitive anyway
        op = _OPS.get(op, op)
        value = match.group("value").strip().strip("\"'`")
        if col in NUMERIC:
            number = _float(value)
            if number is None or op == "contains":
                problems.append(f"ignored filter '{clause.strip()[:60]}': needs a number")
                continue
            data = _numeric(gaps, col)
            mask &= {"eq": data == number, "ne": data != number, "lt": data < number, "le": data <= number,
                     "gt": data > number, "ge": data >= number}[op]
            continue
        ids, labels = gaps.labels[col]
        needle = value.lower()
        test = {"contains": lambda s: needle in s.lower(), "eq": lambda s: s.lower() == needle,
                "ne": lambda s: s.lower() != needle}.get(op)
        if test is None:
            problems.append(f"ignored filter '{clause.strip()[:60]}': text columns take contains, = or !=")
            continue
        matching = np.array([k for k, s in enumerate(labels) if test(s)], np.int32)
        mask &= np.isin(ids, matching)
    return mask, problems


def _order(gaps: GapColumns, picked: np.ndarray, sort_by: object) -> np.ndarray:
    keys = []
    for spec in sort_by if isinstance(sort_by, list) else []:
        col = spec.get("column_id") if isinstance(spec, dict) else None
        if col in NUMERIC:
            key = _numeric(gaps, col)[picked]
        elif col in gaps.labels:
            ids, labels = gaps.labels[col]
            rank = np.empty(len(labels), np.int64)
            rank[np.argsort(np.array(labels, dtype=object), kind="stable")] = np.arange(len(labels))
            key = rank[ids[picked]]
        else:
            continue
        keys.append(-key if spec.get("direction") == "desc" else key)
    if not keys:
        return np.arange(picked.size)
    # lexsort's last key is the primary one; the table lists its primary sort first.
    return np.lexsort(keys[::-1])


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _float(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if np.isfinite(number) else None
