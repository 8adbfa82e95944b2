"""Renderers of an analysis for people and tools: ``text`` (the terminal report of
``xlaprof analyze``) and ``json_report`` (the JSON contract of ``xlaprof analyze --json``);
``diff_text`` and ``diff_json`` (``xlaprof diff``, with ``verdict`` its one-line answer).
They read ``xlaprof.analysis`` results and never compute an analysis themselves."""
from __future__ import annotations

from xlaprof.report.diff_json import diff_json
from xlaprof.report.diff_text import render_diff_text
from xlaprof.report.json_report import analysis_json
from xlaprof.report.text import render_text

__all__ = ["analysis_json", "render_text", "diff_json", "render_diff_text"]
