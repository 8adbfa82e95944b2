"""A short HTML summary of a ``SessionAnalysis``: what a notebook shows for a result (``_repr_html_``).

Contract: ``summary_html(analysis, top=5)`` returns a self-contained HTML fragment (no script, no
external style; every text escaped): the session, its workers and window, device busy and idle
time with idle by cause, and the ``top`` findings with their line and time lost; and a line
naming the tables that convert to DataFrames.
"""
from __future__ import annotations

from html import escape

from xlaprof.units import format_duration

TABLES = "gaps, findings, idle_by_line, steps, graphs, ops, compiles"


def summary_html(analysis, top: int = 5) -> str:
    idle, busy = analysis.idle_us, analysis.busy_us
    share = idle / (idle + busy) if idle + busy else 0.0
    causes = "".join(f"<tr><td>{escape(cause)}</td><td style='text-align:right'>{format_duration(us)}</td></tr>"
                     for cause, us in sorted(analysis.idle_by_cause.items(), key=lambda kv: -kv[1]) if us > 0)
    findings = "".join(
        f"<tr><td>{rank}</td><td>{escape(f.kind.value)}</td><td>{escape(f.source or f.span or '-')}</td>"
        f"<td style='text-align:right'>{format_duration(f.lost_us)}</td></tr>"
        for rank, f in enumerate(analysis.findings[:top], 1))
    workers = ", ".join(escape(w.worker.label) for w in analysis.workers)
    return (f"<div><b>xlaprof</b> {escape(analysis.session.path)}<br>"
            f"{len(analysis.workers)} worker(s): {workers}; window {format_duration(analysis.window_us)}; "
            f"device busy {format_duration(busy)}, idle {format_duration(idle)} ({share:.0%})"
            f"<table><tr><th>idle cause</th><th>time</th></tr>{causes}</table>"
            f"<table><tr><th>#</th><th>finding</th><th>line</th><th>lost</th></tr>{findings}</table>"
            f"<small>{len(analysis.findings)} finding(s), {analysis.gap_count} gap piece(s); as DataFrames: "
            f"<code>result.&lt;table&gt;.to_pandas()</code> for {TABLES}</small></div>")
