"""Short reprs of results, for a notebook or a terminal: a few lines that say what is there, never the data.

Contract: ``short_repr(obj)`` of a dataclass is ``Name(field=value, ...)``, one field a line, each
value summarized: numbers rounded to 4 significant digits, strings cut at ``MAX_TEXT`` characters,
enums by their value, a list or tuple of up to 4 numbers as those numbers, other lists, tuples,
dicts, sets and numpy arrays by their size (``<list of 40 items>``, ``<array (1200,) float64>``), nested dataclasses and other objects by their class name (and a
``label``/``path``/``name`` attribute where they have one); the whole is at most ``MAX_CHARS``
characters. A result class takes it with ``__repr__ = short_repr``.
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass
from enum import Enum

import numpy as np

MAX_CHARS = 1500  # a repr is cut here (with the count of the fields left out)
MAX_TEXT = 80  # characters of a string field shown
SCALARS = (bool, int, float, np.integer, np.floating)


def short_repr(obj) -> str:
    name = type(obj).__name__
    if not is_dataclass(obj):
        return f"<{name}>"
    lines = [f"{f.name}={summary(getattr(obj, f.name, None))}" for f in fields(obj) if f.repr]
    out, used = [], len(name) + 2
    for i, line in enumerate(lines):
        if used + len(line) + 4 > MAX_CHARS:
            out.append(f"... {len(lines) - i} more fields")
            break
        out.append(line)
        used += len(line) + 4
    return f"{name}(\n" + "".join(f"  {line},\n" for line in out) + ")"


def summary(value) -> str:
    """One value in a few characters."""
    if value is None or isinstance(value, SCALARS):
        return _scalar(value)
    if isinstance(value, Enum):
        return repr(value.value)
    if isinstance(value, str):
        return repr(value if len(value) <= MAX_TEXT else value[:MAX_TEXT - 1] + "…")
    if isinstance(value, np.ndarray):
        return f"<array {value.shape} {value.dtype}>"
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        if not isinstance(value, dict) and len(value) <= 4 and all(
                v is None or isinstance(v, (*SCALARS, Enum)) for v in value):
            brackets = "[]" if isinstance(value, list) else "()"
            return brackets[0] + ", ".join(summary(v) for v in value) + brackets[1]
        return f"<{type(value).__name__} of {len(value):,} item{'' if len(value) == 1 else 's'}>"
    for attribute in ("label", "path", "name"):
        named = getattr(value, attribute, None)
        if isinstance(named, str):
            shown = named if len(named) <= MAX_TEXT else "…" + named[1 - MAX_TEXT:]  # a path's end says most
            return f"<{type(value).__name__} {shown!r}>"
    return f"<{type(value).__name__}>"


def _scalar(value) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, np.integer):
        return str(int(value))
    return repr(value)
