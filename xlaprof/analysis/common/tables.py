"""The tables of an analysis as rows that also convert to pandas DataFrames, for notebooks.

Contract: a ``Table`` is a list of rows (dataclasses or dicts; every list operation works on it)
whose ``to_pandas()`` returns a ``pandas.DataFrame`` with a column per field (enums as their
values, stacks as tuples); an empty table gives an empty frame with the table's ``columns``. Its
repr is one line: the row count and the columns, never the rows (a notebook's ``result.gaps``).
pandas is optional (``pip install 'xlaprof[pandas]'``): without it ``to_pandas`` raises
``MissingExtraError`` with that command; nothing else needs it.
"""
from __future__ import annotations

from dataclasses import asdict, fields, is_dataclass
from enum import Enum

from xlaprof.errors import MissingExtraError

MAX_COLUMNS = 12  # columns named in a table's repr


class Table(list):
    def __init__(self, rows=(), columns: tuple[str, ...] = ()) -> None:
        super().__init__(rows)
        self.columns = columns

    def __repr__(self) -> str:
        columns = self.columns or (tuple(_record(self[0])) if self else ())
        more = f", ... {len(columns) - MAX_COLUMNS} more" if len(columns) > MAX_COLUMNS else ""
        return f"<Table of {len(self):,} rows ({', '.join(columns[:MAX_COLUMNS])}{more}); .to_pandas() for a DataFrame>"

    def to_pandas(self):
        pandas = require_pandas("Table.to_pandas")
        records = [_record(row) for row in self]
        columns = list(records[0]) if records else list(self.columns)
        return pandas.DataFrame.from_records(records, columns=columns)


def columns_of(cls) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def require_pandas(feature: str):
    try:
        import pandas
    except ImportError:
        raise MissingExtraError(feature, "pandas", "pandas") from None
    return pandas


def _record(row) -> dict:
    data = asdict(row) if is_dataclass(row) else dict(row)
    return {k: v.value if isinstance(v, Enum) else tuple(v) if isinstance(v, list) else v for k, v in data.items()}
