"""Exports of an analysed session to the trace viewers people already use.

Contract: ``export_trace(analysis, path, fmt, inputs=None)`` writes ``analysis`` (a
``SessionAnalysis``) to the file ``path`` (``-``: the standard output) as ``fmt``, one of
``FORMATS``: ``"perfetto"`` (a protobuf trace for ui.perfetto.dev and trace_processor) or
``"chrome"`` (the JSON of chrome://tracing), and returns the ``TraceModel`` written;
``check_output(path, fmt, inputs)`` raises the same one-line errors (an unknown format, an output
that could destroy an input or is no regular file) before any work. The output never replaces an
input: not the session's directory, capture files or manifest, nor any of ``inputs`` (the paths the
user gave; by default the session's own), nor anything inside a logdir's ``plugins/profile``, nor
a directory, FIFO or device (``xlaprof.session.output_file``). It is written under a temporary
name beside the target and renamed when whole, so an existing file is replaced only by a complete
export. ``trace_model`` decides what a trace holds (the capture's events, xlaprof's idle gaps by
cause and findings), the writers only how it is written.
"""
from __future__ import annotations

from collections.abc import Iterable

from xlaprof.analysis import SessionAnalysis
from xlaprof.errors import XlaprofError
from xlaprof.export.chrome_trace import write_chrome
from xlaprof.export.perfetto_trace import write_perfetto
from xlaprof.export.trace_model import TraceModel, trace_model
from xlaprof.session.output_file import check_output_file, write_output_file

FORMATS = {"perfetto": write_perfetto, "chrome": write_chrome}

__all__ = ["FORMATS", "TraceModel", "check_output", "export_trace", "trace_model"]


def check_output(path: str, fmt: str, inputs: Iterable[str | None] = ()) -> str:
    """The file the export will replace or create (``-``: the standard output); raises
    ``XlaprofError`` for an unknown format or an output it must not write (checked before any work)."""
    if fmt not in FORMATS:
        raise XlaprofError(f"unknown export format {fmt!r}: give one of {', '.join(FORMATS)}")
    return check_output_file(path, inputs)


def export_trace(analysis: SessionAnalysis, path: str, fmt: str,
                 inputs: Iterable[str | None] | None = None) -> TraceModel:
    session = analysis.session
    guarded = [session.path, *(w.path for w in session.workers), *(inputs or ())]
    check_output(path, fmt, guarded)
    model = trace_model(analysis)
    write_output_file(path, lambda out: FORMATS[fmt](model, out), guarded)
    return model
