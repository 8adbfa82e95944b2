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
``schema(name)`` loads the published JSON Schema of ``"analysis"`` (``xlaprof analyze --json``)
or ``"diff"`` (``xlaprof diff --json``), shipped in the package as ``schemas/<name>.schema.json``.
"""
from __future__ import annotations

import json
import os
from importlib import resources

SCHEMA_VERSION = "2.0"
SCHEMAS = ("analysis", "diff")
_KEPT_WHOLE = frozenset({"session", "source_root"})  # keys whose paths are never made relative


def finalize(data: dict, source_root: str | None = None) -> dict:
    prefix = os.path.join(os.path.abspath(source_root), "") if source_root else None
    body = _walk(data, prefix, time=False, key="")
    return {"schema_version": SCHEMA_VERSION, **body, "source_root": os.path.abspath(source_root) if source_root else None}


def schema(name: str) -> dict:
    if name not in SCHEMAS:
        raise ValueError(f"no schema {name!r}: one of {', '.join(SCHEMAS)}")
    return json.loads(resources.files("xlaprof.report").joinpath("schemas", f"{name}.schema.json").read_text())


def _walk(value, prefix: str | None, time: bool, key: str, keys: dict | None = None):
    """``value`` in the contract's form; ``keys`` caches, per map key, (its text, whether it holds times)."""
    kind = type(value)
    if kind is float:
        return round(value, 3) if time and value - value == 0 else _round(value, time)  # not inf, not nan
    if kind is dict or isinstance(value, dict):
        keys = {} if keys is None else keys
        out = {}
        for k, v in value.items():
            if isinstance(k, str):
                found = keys.get(k)
                if found is None:
                    found = keys[k] = (_relative(k, prefix), k.endswith("_us") and k != "relative", k != "relative")
                text, is_time, keeps_time = found
                out[text] = _walk(v, prefix, (time and keeps_time) or is_time, k, keys)
            else:
                out[k] = _walk(v, prefix, time, key, keys)
        return out
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return [_walk(v, prefix, time, key, keys) for v in value]
    if isinstance(value, float):
        return _round(value, time)
    if isinstance(value, str) and key not in _KEPT_WHOLE:
        return _relative(value, prefix)
    return value


def _round(value: float, time: bool) -> float:
    if value != value or value in (float("inf"), float("-inf")):
        return value
    return round(value, 3) if time else float(f"{value:.12g}")


def _relative(text: str, prefix: str | None) -> str:
    return text.replace(prefix, "") if prefix and prefix in text else text
