"""Exports of an analysed session to the trace viewers people already use.

Contract: ``export_trace(analysis, path, fmt)`` writes ``analysis`` (a ``SessionAnalysis``) to
the file ``path`` as ``fmt``, one of ``FORMATS``: ``"perfetto"`` (a protobuf trace for
ui.perfetto.dev and trace_processor) or ``"chrome"`` (the JSON of chrome://tracing), and returns
the ``TraceModel`` written; ``check_output(path, fmt)`` raises the same one-line errors (an
unknown format, a missing directory) before any work. The file is written under a temporary name in its directory and renamed
when whole, so an existing file is replaced only by a complete export. ``trace_model`` decides what a
trace holds (the capture's events, xlaprof's idle gaps by cause and findings), the writers only
how it is written.
"""
from __future__ import annotations

import os
import tempfile

from xlaprof.analysis import SessionAnalysis
from xlaprof.errors import XlaprofError
from xlaprof.export.chrome_trace import write_chrome
from xlaprof.export.perfetto_trace import write_perfetto
from xlaprof.export.trace_model import TraceModel, trace_model

FORMATS = {"perfetto": write_perfetto, "chrome": write_chrome}

__all__ = ["FORMATS", "TraceModel", "check_output", "export_trace", "trace_model"]


def check_output(path: str, fmt: str) -> str:
    """The directory the export will be written in; raises ``XlaprofError`` for an unknown format
    or a directory that does not exist (checked before any work)."""
    if fmt not in FORMATS:
        raise XlaprofError(f"unknown export format {fmt!r}: give one of {', '.join(FORMATS)}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise XlaprofError(f"{path}: its directory does not exist")
    if os.path.isdir(path):
        raise XlaprofError(f"{path} is a directory: give the file to write")
    return directory


def export_trace(analysis: SessionAnalysis, path: str, fmt: str) -> TraceModel:
    directory = check_output(path, fmt)
    model = trace_model(analysis)
    fd, staged = tempfile.mkstemp(prefix=".xlaprof-export-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            FORMATS[fmt](model, out)
        os.chmod(staged, 0o644)  # mkstemp's 0600 is for the staging only
        os.replace(staged, path)
    except BaseException:
        os.unlink(staged)
        raise
    return model
