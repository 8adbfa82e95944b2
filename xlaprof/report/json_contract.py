"""The versioned JSON contract: what every JSON report of xlaprof shares, and its published schema.

Contract: ``finalize(data, source_root)`` turns a report's dict into the contract's form:
- ``schema_version`` first (``SCHEMA_VERSION``; the unversioned contract before it counts as
  "1"): the major number changes when a key moves or changes meaning, the minor one when keys or
  values (a new cause) are added;
- every time (a float under a key ending in ``_us``, except a change's ``relative``) rounded to
  the nanosecond, 3 decimals of a microsecond; every other float to 12 significant digits
  (``2801.4849999999997`` becomes ``2801.485``);
- with a ``source_root`` (a directory), every path under it, in any string or map key (sources,
  stacks, texts that quote a line), relative to it, and ``source_root`` stated once, last, as
  the one place that holds the full path (null: paths left as recorded). The ``session`` paths
  stay whole.
A ``Columns`` value (rows given column-wise) is formed a column at a time, as its rows would be.
``write_compact(data, write, source_root)`` writes the same as compact JSON a piece at a time:
the values of a ``Deferred`` map (a pod's per-worker step rows) are made, written and dropped one
by one, so a report's memory does not grow with them.
``schema(name)`` loads the published JSON Schema of ``"analysis"`` (``xlaprof analyze --json``)
or ``"diff"`` (``xlaprof diff --json``), shipped in the package as ``schemas/<name>.schema.json``.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator

import numpy as np

SCHEMA_VERSION = "2.8"
_TIME_DECIMALS = 3  # times (us) are rounded to ns
SCHEMAS = ("analysis", "diff")
_KEPT_WHOLE = frozenset({"session", "source_root"})  # keys whose paths are never made relative


class Deferred:
    """A map of a report whose values are made only when the report is finalized or written:
    ``make()`` yields its (key, value) pairs one at a time."""

    def __init__(self, make: Callable[[], Iterable[tuple]]) -> None:
        self._make = make

    def items(self) -> Iterable[tuple]:
        return self._make()


class Columns:
    """Rows of a report given column-wise: ``columns`` maps each row key to its values, one per row
    (a map of such columns for a map in each row). In the contract's form they are the rows, made
    a column at a time (a pod's step rows: no walk per row)."""

    def __init__(self, columns: dict) -> None:
        self.columns = columns


def finalize(data: dict, source_root: str | None = None) -> dict:
    body = _walk(data, _prefix(source_root), time=False, key="")
    return {"schema_version": SCHEMA_VERSION, **body, "source_root": _root(source_root)}


def write_compact(data: dict, write: Callable[[bytes], object], source_root: str | None = None) -> None:
    """``finalize(data, source_root)`` as compact JSON and a newline (the bytes of orjson's ``dumps``)
    passed to ``write`` a piece at a time: a ``Deferred`` map an entry at a time, so that its values
    are never all held at once."""
    import orjson

    def dump(value) -> bytes:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)

    prefix, keys = _prefix(source_root), {}
    write(b'{"schema_version":' + dump(SCHEMA_VERSION))
    for key, value in data.items():
        text, in_time = _key_form(key, prefix, keys, time=False)
        write(b"," + dump(text) + b":")
        if isinstance(value, Deferred):
            sep = b"{"
            for inner, item in _walk_items(value, prefix, in_time, keys, key):
                write(sep + dump(inner) + b":" + dump(item))
                sep = b","
            write(b"{}" if sep == b"{" else b"}")
        else:
            write(dump(_walk(value, prefix, in_time, key, keys)))
    write(b',"source_root":' + dump(_root(source_root)) + b"}\n")


def schema(name: str) -> dict:
    if name not in SCHEMAS:
        raise ValueError(f"no schema {name!r}: one of {', '.join(SCHEMAS)}")
    from importlib import resources  # not at import: it brings tempfile and shutil to every command

    return json.loads(resources.files("xlaprof.report").joinpath("schemas", f"{name}.schema.json").read_text())


def _walk(value, prefix: str | None, time: bool, key: str, keys: dict | None = None):
    """``value`` in the contract's form; ``keys`` caches, per map key, (its text, whether it holds times)."""
    kind = type(value)
    if kind is float:
        return _round(value, time)
    if kind is Columns:
        return _walk_columns(value.columns, prefix, time, {} if keys is None else keys, key)
    if kind is dict or isinstance(value, (dict, Deferred)):
        keys = {} if keys is None else keys
        return dict(_walk_items(value, prefix, time, keys, key))
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return [_walk(v, prefix, time, key, keys) for v in value]
    if isinstance(value, float):
        return _round(value, time)
    if isinstance(value, str) and key not in _KEPT_WHOLE:
        return _relative(value, prefix)
    return value


def _walk_items(mapping, prefix: str | None, time: bool, keys: dict, key: str = "") -> Iterator[tuple]:
    """A map's (key, value) pairs in the contract's form, one at a time."""
    for k, v in mapping.items():
        text, in_time = _key_form(k, prefix, keys, time)
        if type(v) is float:  # most values: formed here, without a call of _walk each
            yield text, _round(v, in_time)
        else:
            yield text, _walk(v, prefix, in_time, k if isinstance(k, str) else key, keys)


def _walk_columns(columns: dict, prefix: str | None, time: bool, keys: dict, key: str) -> list[dict]:
    """The rows of ``columns`` in the contract's form, made a column at a time."""
    texts, formed = [], []
    for k, column in columns.items():
        text, t = _key_form(k, prefix, keys, time)
        texts.append(text)
        if isinstance(column, dict):
            formed.append(_walk_columns(column, prefix, t, keys, k))
        else:
            inner = k if isinstance(k, str) else key
            # Times: the rounding at once (numpy's, which scales by 10**3 first: at an exact tie it may
            # differ from round()'s by the last digit; none did on the bench's 1M-event capture).
            if t and column and all(type(v) is float for v in column):
                formed.append(np.round(np.array(column), _TIME_DECIMALS).tolist())
                continue
            formed.append([_round(v, t) if type(v) is float else _walk(v, prefix, t, inner, keys) for v in column])
    return [dict(zip(texts, row)) for row in zip(*formed)]


def _key_form(k, prefix: str | None, keys: dict, time: bool) -> tuple:
    """A map key's text in the contract's form, and whether the values under it are times (in
    ``time``, the parent's: a key ending in ``_us`` holds times, ``relative`` never does); the
    key's handling cached in ``keys``."""
    found = keys.get(k)
    if found is None:
        found = keys[k] = ((_relative(k, prefix), k.endswith("_us") and k != "relative", k != "relative")
                           if isinstance(k, str) else (k, False, True))
    text, is_time, keeps_time = found
    return text, is_time or (time and keeps_time)


def _prefix(source_root: str | None) -> str | None:
    return os.path.join(os.path.abspath(source_root), "") if source_root else None


def _root(source_root: str | None) -> str | None:
    return os.path.abspath(source_root) if source_root else None


def _round(value: float, time: bool) -> float:
    if value - value != 0:  # inf or nan: kept as they are
        return value
    return round(value, _TIME_DECIMALS) if time else float(f"{value:.12g}")


def _relative(text: str, prefix: str | None) -> str:
    return text.replace(prefix, "") if prefix and prefix in text else text
