"""Renderers of an analysis for people and tools: ``text`` (the terminal report of
``xlaprof analyze``) and ``json_report`` (the JSON contract of ``xlaprof analyze --json``);
``diff_text`` and ``diff_report`` (``xlaprof diff``: ``diff_json``, with ``verdict`` its one-line
answer). They read ``xlaprof.analysis`` results and never compute an analysis themselves.
The names below are imported when first used: a command that prints one report (``analyze
--json``) does not import the others' modules (the diff's budgets and step-time bootstrap)."""
from __future__ import annotations

import importlib

_HOMES = {"analysis_json": "json_report", "render_text": "text", "diff_json": "diff_report",
          "render_diff_text": "diff_text"}
__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
