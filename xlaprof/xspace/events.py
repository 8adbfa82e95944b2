"""The columnar event model: planes of events as numpy arrays, names interned per plane.

Contract:
- ``EventTable`` holds one row per timed event, in four equal-length columns:
  ``line`` (int32, index into ``Plane.lines``), ``name`` (int32, index into ``Plane.names``),
  ``start_us`` (float64, microseconds since the worker's origin, see ``reader``) and
  ``dur_us`` (float64, microseconds). Rows are in capture order, not sorted.
- ``StatTable`` is sparse: it holds the stats of the events that carry any, on the planes
  whose stats were read (host planes). ``event`` (int64 row of the EventTable), ``key``
  (int32 index into ``StatTable.keys``) and ``value`` (a Python list, int/float/str/bytes).
  ``stat_text(value)``: a stat's value as text (bytes decoded, invalid UTF-8 replaced; None stays None).
- ``IntColumn`` holds one integer stat (e.g. ``program_id``) of every event carrying it, as two
  numpy columns: read for the few keys of ``vocabulary.INT_STAT_COLUMNS`` on host planes, where
  the CPU device's op events carry them by the hundred thousand.
- ``Plane.metadata_stats`` holds the stats of the plane's event *metadata* (one entry per
  distinct event name, not per event): the compiled HLO of ``/host:metadata``, a TPU op's
  ``program_id`` and category. ``Plane.metadata_ids`` are the metadata ids behind ``names``.
- A ``Plane`` never holds a Python object per event: a TPU capture holds millions of events.
  ``Plane.rows_on_lines(ids)`` finds the rows of some lines' events a block of ``SCAN_ROWS`` at a
  time, as ``row_dtype`` indices (int32 below 2**31 rows): finding them costs what they keep;
  ``Plane.last_end(ids)``, the latest end of its events, is found the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SCAN_ROWS = 1 << 18  # rows of an EventTable scanned at a time (here and by the analysis's device modules)


def row_dtype(rows: int) -> np.dtype:
    """The smallest integer type indexing an EventTable of ``rows`` rows (int32, else int64)."""
    return np.dtype(np.int32 if rows < 2**31 else np.int64)


@dataclass(frozen=True)
class EventTable:
    line: np.ndarray  # int32: index into Plane.lines
    name: np.ndarray  # int32: index into Plane.names
    start_us: np.ndarray  # float64: microseconds since the worker origin
    dur_us: np.ndarray  # float64: microseconds

    def __len__(self) -> int:
        return int(self.name.shape[0])

    @staticmethod
    def empty() -> EventTable:
        return EventTable(np.zeros(0, np.int32), np.zeros(0, np.int32),
                          np.zeros(0, np.float64), np.zeros(0, np.float64))


def stat_text(value) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class StatTable:
    keys: list[str]  # stat names, interned
    event: np.ndarray  # int64: row in the plane's EventTable
    key: np.ndarray  # int32: index into keys
    value: list  # one Python value per row (int, float, str or bytes)

    @staticmethod
    def empty() -> StatTable:
        return StatTable([], np.zeros(0, np.int64), np.zeros(0, np.int32), [])

    def column(self, key: str) -> dict[int, object]:
        """{event row: value} of one stat, e.g. ``column("source")``."""
        try:
            key_id = self.keys.index(key)
        except ValueError:
            return {}
        rows = np.flatnonzero(self.key == key_id)
        values = self.value
        return dict(zip(self.event[rows].tolist(), [values[r] for r in rows.tolist()]))

    def of_event(self, row: int) -> dict[str, object]:
        hits = np.flatnonzero(self.event == row)
        return {self.keys[self.key[h]]: self.value[h] for h in hits}


@dataclass(frozen=True)
class IntColumn:
    """One integer stat of the events that carry it."""

    rows: np.ndarray  # int64: rows of the plane's EventTable, ascending
    values: np.ndarray  # int64: the stat's value per row

    @staticmethod
    def empty() -> IntColumn:
        return IntColumn(np.zeros(0, np.int64), np.zeros(0, np.int64))


@dataclass(frozen=True)
class Line:
    id: int
    name: str
    display_name: str


@dataclass
class Plane:
    name: str
    lines: list[Line]
    names: list[str]  # interned event names; EventTable.name indexes this list
    events: EventTable
    stats: StatTable = field(default_factory=StatTable.empty)
    plane_stats: dict[str, object] = field(default_factory=dict)
    int_columns: dict[str, IntColumn] = field(default_factory=dict)  # see vocabulary.INT_STAT_COLUMNS
    metadata_stats: dict[int, dict[str, object]] = field(default_factory=dict)  # name index -> its stats
    metadata_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per name: its metadata id

    def int_column(self, key: str) -> IntColumn:
        return self.int_columns.get(key) or IntColumn.empty()

    def name_ids(self, wanted: set[str] | list[str] | tuple[str, ...]) -> np.ndarray:
        """The interned ids of those of ``wanted`` that occur in this plane."""
        wanted = set(wanted)
        return np.array([i for i, n in enumerate(self.names) if n in wanted], np.int32)

    def rows_named(self, wanted: set[str] | list[str] | tuple[str, ...]) -> np.ndarray:
        """Row indices of the events whose name is in ``wanted``."""
        ids = self.name_ids(wanted)
        if ids.size == 0:
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.isin(self.events.name, ids))

    def rows_on_lines(self, line_ids) -> np.ndarray:
        """Ascending rows (``row_dtype``) of the events on the lines ``line_ids``, scanned in blocks
        (counted first, so the rows are written once, where they stay)."""
        line_ids = np.asarray(line_ids, np.int32)
        column = self.events.line
        on = (lambda block: block == line_ids[0]) if line_ids.size == 1 else (lambda block: np.isin(block, line_ids))
        blocks = range(0, column.size, SCAN_ROWS)
        rows = np.empty(sum(int(np.count_nonzero(on(column[lo:lo + SCAN_ROWS]))) for lo in blocks),
                        row_dtype(column.size))
        at = 0
        for lo in blocks:
            hit = np.flatnonzero(on(column[lo:lo + SCAN_ROWS]))
            rows[at:at + hit.size] = hit
            rows[at:at + hit.size] += lo
            at += hit.size
        return rows

    def last_end(self, line_ids=None) -> float:
        """The latest end (start + duration) of the plane's events, or of those on the lines
        ``line_ids``, scanned in blocks; -inf where there are none."""
        ev, last = self.events, -np.inf
        for lo in range(0, len(ev), SCAN_ROWS):
            block = slice(lo, lo + SCAN_ROWS)
            ends = ev.start_us[block] + ev.dur_us[block]
            if line_ids is not None:
                ends = ends[np.isin(ev.line[block], np.asarray(line_ids, np.int32))]
            if ends.size:
                last = max(last, float(ends.max()))
        return last

    def line_ids_where(self, predicate) -> np.ndarray:
        return np.array([i for i, line in enumerate(self.lines) if predicate(line.name)], np.int32)

    def __len__(self) -> int:
        return len(self.events)
