"""Small HTML building blocks of the pages: cards, the findings list, messages, tables.

Contract: pure functions from xlaprof results to Dash components; no callbacks, no analysis.
Element ids and class names used here are what the browser tests look for: ``answer`` (the top of
the session page: ``verdict``, ``idle-summary`` with its ``idle-segment``s, ``top-findings`` of
``compact-finding`` rows), ``findings`` (each finding of a line in several spans with its
``finding-spans`` breakdown)
(``finding``, ``finding-span``, ``finding-source``, ``finding-code``, ``finding-stack``, ``finding-inside``:
the library lines of a finding at a call into a library, ``inside-source``/``-code``/``-count``/``-lost``), the stack
panel's body (``stack-title``, ``stack-code``, ``stack-frames`` of ``frame`` items, marked
``frame-user``/``frame-framework`` and ``frame-source``), ``session-error``, ``not-found``,
``sessions-table`` (``session-link``), ``compare-link``, ``recompiles`` (``recompile``, ``recompile-summary``),
``compile-changed``, ``legend`` (``legend-item``: a figure's key).
"""
from __future__ import annotations

from urllib.parse import quote

from dash import dcc, html

from dashboard.figures import color
from dashboard.views.graphs import CompileDetail
from dashboard.views.overview import Overview
from dashboard.views.stacks import (
    GapStack,
    LibraryLineRow,
    StackLine,
    finding_library_lines,
    finding_stack,
)
from xlaprof.analysis.findings.findings import Finding
from xlaprof.analysis.compiles.recompiles import RecompileExplanation
from xlaprof.analysis.host.frames import short_location
from xlaprof.analysis.pipeline.worker_comparison import Straggler
from xlaprof.report.causes import finding_cost, titled
from xlaprof.units import format_duration, format_ms

TOP_FINDINGS = 10
TOP_COMPACT = 3  # findings shown as one row each at the top of the session page
BAR_LABEL_SHARE = 0.12  # a cause's segment of the idle bar is named when it holds this share


SESSION_PREFIX = "/session/"  # the pages' paths
COMPARE_PATH = "/compare"


def session_href(run: str) -> str:
    return f"{SESSION_PREFIX}{quote(run, safe='')}"


def card(title: str, *children, class_name: str = "") -> html.Div:
    return html.Div([html.H3(title), *children], className=f"card {class_name}".strip())


def stat(label: str, value: str) -> html.Div:
    return html.Div([html.Span(value, className="stat-value"), html.Span(label, className="stat-label")],
                    className="stat")


def legend(items: list[tuple[str, str, str]], legend_id: str | None = None) -> html.Div:
    """An HTML key of (name, colour, hover text) items, above a figure (class ``legend``)."""
    keys = [html.Span([html.Span(className="legend-swatch", style={"background": colour}), name],
                      className="legend-item", title=hover) for name, colour, hover in items]
    return html.Div(keys, className="legend", **({"id": legend_id} if legend_id else {}))


def message(kind: str, title: str, text: str) -> html.Div:
    """A full-width notice: ``kind`` is ``not-found`` or ``session-error``."""
    return html.Div([html.H2(title), html.P(text, className="message-text"),
                     dcc.Link("Back to all sessions", href="/")], id=kind, className=f"message {kind}")


def answer(verdict: str, ov: Overview, findings: list[Finding]) -> html.Div:
    """The top of the session page, what fits a 1024x768 screen: the verdict (one sentence), the
    idle-by-cause bar and the top ``TOP_COMPACT`` findings as one row each, with a link to the rest."""
    top = findings[:TOP_COMPACT]
    rows = [html.Li([
        html.Span(f"#{rank}", className="finding-rank"), _kind_badge(f),
        html.Span(finding_cost(f.lost_us, f.busy_added_us) if f.cost_us > 0 else "", className="finding-lost"),
        html.Code(f.span or "(outside any span)", className="finding-span"),
        html.Span(f"+{len(f.spans) - 1} span{'s' if len(f.spans) > 2 else ''}", className="muted",
                  title=spans_text(f.spans)) if len(f.spans) > 1 else None,
        html.Span(short_location(f.source) or "source unknown", title=f.source or "", className="finding-source"),
        html.Code(" ".join(f.code.split()), className="compact-code", title=f.code) if f.code else None,
    ], className="compact-finding") for rank, f in enumerate(top, start=1)]
    more = html.A(f"all {len(findings)} findings, with stacks and fixes ↓", href="#findings",
                  className="muted") if findings else None
    return html.Div([html.P(verdict, id="verdict", className="verdict"), idle_bar(ov),
                     html.Ol(rows, id="top-findings", className="compact-findings") if rows else None, more],
                    id="answer", className="section answer")


def idle_bar(ov: Overview) -> html.Div:
    """Idle time by cause as one horizontal bar of the causes' shares, each segment named when wide enough."""
    idle = ov.idle_us
    parts = sorted(((c, us) for c, us in ov.idle_by_cause_us.items() if us > 0), key=lambda kv: -kv[1])
    if idle <= 0 or not parts:
        return html.Div(html.Span("no idle time", className="muted"), id="idle-summary")
    segments = [html.Div(f"{cause} {100 * us / idle:.0f}%" if us / idle >= BAR_LABEL_SHARE else "",
                         className="idle-segment", title=f"{titled(cause)} — {format_ms(us)}, {100 * us / idle:.1f}%",
                         style={"flexGrow": us, "background": color(cause)}) for cause, us in parts]
    return html.Div([html.Span(f"idle {100 * ov.idle_share:.1f}% · {format_ms(ov.idle_us)} by cause:",
                               className="idle-summary-label"), html.Div(segments, className="idle-bar")],
                    id="idle-summary")


def _kind_badge(f: Finding) -> html.Span:
    cause = f.kind.cause.value if f.kind.cause else f.kind.value
    return html.Span(f.kind.value, className="badge", style={"background": color(cause)}, title=titled(cause))


def findings_list(findings: list[Finding]) -> html.Div:
    """Every finding (the top ``TOP_FINDINGS``) with its detail, code, stack and library lines; an
    advice is written once, at the first finding it fits, and a later finding with the same advice
    points to it ("Fix: same as #1")."""
    if not findings:
        return html.Div(html.P("No findings: the devices were never idle in the analysed window."),
                        id="findings", className="section")
    items, advised = [], {}
    for rank, f in enumerate(findings[:TOP_FINDINGS], start=1):
        first = advised.setdefault(f.advice, rank)
        advice = f.advice if first == rank else f"Fix: same as #{first} above."
        items.append(html.Li([
            html.Div([
                html.Span(f"#{rank}", className="finding-rank"), _kind_badge(f),
                html.Span(finding_cost(f.lost_us, f.busy_added_us) if f.cost_us > 0 else "", className="finding-lost"),
                html.Code(f.span or "(outside any span)", className="finding-span"),
                html.Span(f.source or "source unknown", className="finding-source"),
            ], className="finding-head"),
            html.P(f.detail, className="finding-detail"),
            html.P(["In spans: ", spans_text(f.spans)], className="finding-spans muted") if len(f.spans) > 1 else None,
            html.Pre(f.code, className="finding-code") if f.code else None,
            html.Details([html.Summary(f"Python stack ({_frames(len(f.stack))}, outermost first)"),
                          stack_frames(finding_stack(f))], className="finding-stack") if f.stack else None,
            library_lines(finding_library_lines(f)),
            html.P(advice, className="finding-advice" + ("" if first == rank else " advice-ref")),
        ], className="finding", id=f"finding-{rank}"))
    more = len(findings) - TOP_FINDINGS
    return html.Div([html.H2("Findings, most costly first"), html.Ol(items, className="findings-list"),
                     html.P(f"and {more} smaller ones", className="muted") if more > 0 else None],
                    id="findings", className="section")


def spans_text(spans) -> str:
    """A line's idle time per span it fell in, costliest first: "train_step 5.1 ms · forward 0.2 ms"."""
    return " · ".join(f"{span or '(outside any span)'} {format_duration(us)}" for span, us in spans)


def _frames(n: int) -> str:
    return f"{n} frame" + ("" if n == 1 else "s")


def library_lines(rows: list[LibraryLineRow]) -> html.Table | None:
    """The library lines inside a finding at the user's call into a library: line, code, count, time."""
    if not rows:
        return None
    body = [html.Tr([html.Td(html.Code(r.label, title=r.source), className="inside-source"),
                     html.Td(html.Code(r.code) if r.code else "", className="inside-code"),
                     html.Td(r.count, className="inside-count"), html.Td(r.lost, className="inside-lost")])
            for r in rows]
    return html.Table([html.Caption("Inside the library call, costliest line first"), html.Tbody(body)],
                      className="table finding-inside")


def stack_frames(lines: list[StackLine], code: str | None = None) -> html.Ol:
    """A stack, outermost frame first: the user's frames stand out from the framework's, the frame
    the idle time is charged to is marked (with its line's text under it, when known)."""
    items = []
    for line in lines:
        kind = "frame-user" if line.user else "frame-framework"
        body = [html.Span(line.label, title=line.frame)]
        if line.source and code:
            body.append(html.Pre(code, className="stack-code"))
        items.append(html.Li(body, className=f"frame {kind}" + (" frame-source" if line.source else "")))
    return html.Ol(items, className="stack-frames")


def stack_panel(gap: GapStack | None) -> list:
    """The body of the panel beside the timeline for a clicked gap."""
    if gap is None:
        return [html.H3("Python stack"),
                html.P("Click a gap in the gaps table to see the Python stack that was running when it "
                       "happened.", className="muted")]
    place = [html.P(["In span ", html.Code(gap.span)], className="muted")] if gap.span else []
    if not gap.lines:
        where = [" Its span's line: ", html.Code(gap.source, title=gap.source)] if gap.source else []
        return [html.H3("Python stack"), html.B(gap.title, className="stack-title"), *place,
                html.P(["No Python stack was sampled while this gap lasted.", *where], className="muted")]
    return [html.H3("Python stack"), html.B(gap.title, className="stack-title"), *place,
            html.P("Outermost frame first; your code in bold, torch/torch_xla/Python frames in grey.",
                   className="muted"),
            stack_frames(gap.lines, gap.code)]


def device_card(ov: Overview) -> html.Div:
    return card("Device time",
                stat("busy", format_ms(ov.busy_us)), stat("idle", format_ms(ov.idle_us)),
                stat("idle share", f"{100 * ov.idle_share:.1f}%"),
                html.P(f"{ov.devices} device(s) on {ov.workers} worker(s), {format_ms(ov.window_us)} window, "
                       f"{ov.events:,} events", className="muted"), class_name="card-device")


def compiles_card(ov: Overview) -> html.Div:
    recompiled = [html.Li([html.Code(span), f": {n} different graphs"]) for span, n in ov.recompiled_spans.items()]
    before = [stat("compiled before the window", f"{ov.compiles_before:,}")] if ov.compiles_before is not None else []
    return card("Compiles", stat("compiles", f"{ov.compiles:,}"), *before,
                stat("compile time", format_ms(ov.compile_us)),
                html.P("Recompiled spans:" if recompiled else "No span compiled more than one graph.",
                       className="muted"),
                html.Ul(recompiled) if recompiled else None, class_name="card-compiles")


def recompiles_list(explanations: list[RecompileExplanation]) -> html.Div | None:
    """Why each place recompiled (``SessionAnalysis.recompiles``), with the fix."""
    if not explanations:
        return None
    items = [html.Li([html.Div([html.Code(e.span, className="finding-span"),
                                html.Span(e.source or "", className="finding-source"),
                                html.Span(e.kind.value, className="badge kind")],
                               className="finding-head"),
                      html.P(e.summary, className="recompile-summary"),
                      html.P(e.advice, className="finding-advice")], className="recompile")
             for e in explanations]
    return html.Div([html.H3("Why it recompiled"), html.Ul(items, className="recompiles-list")], id="recompiles")


def compile_detail(detail: CompileDetail | None) -> list:
    """The body of the compile-detail box for a clicked compile row."""
    if detail is None:
        return [html.P("Click a compile to see what changed vs the previous graph compiled at its place.",
                       className="muted")]
    body = [html.B(detail.title), html.P(["Changed vs the previous graph of this place: ", html.Code(detail.changed)],
                                         className="compile-changed")]
    if detail.explanation is not None:
        body += [html.P(detail.explanation.summary, className="recompile-summary"),
                 html.P(detail.explanation.advice, className="finding-advice")]
    return body


def reads_card(ov: Overview) -> html.Div:
    top = [html.Li([html.Code(span), f": {n}"]) for span, n in ov.read_top_spans]
    return card("Blocking reads", stat("reads (transfer_from_device)", f"{ov.reads:,}"),
                stat("host blocked", format_ms(ov.read_blocked_us)),
                stat("transfer", format_ms(ov.read_transfer_us)),
                html.P("Top spans:" if top else "No blocking reads.", className="muted"),
                html.Ul(top) if top else None, class_name="card-reads")


def fallbacks_card(ov: Overview, has_metrics: bool) -> html.Div:
    if ov.fallbacks:
        body = html.Ul([html.Li([html.Code(op), f": {int(n)}"]) for op, n in list(ov.fallbacks.items())[:8]])
    elif has_metrics:
        body = html.P("No aten:: op fell back to the CPU.", className="muted")
    else:
        body = html.P("No torch_xla metrics in this capture: start the workers with xlaprof.start_server() "
                      "to record them.", className="muted")
    return card("aten:: CPU fallbacks", body, class_name="card-fallbacks")


def stragglers_list(stragglers: list[Straggler]) -> html.Div:
    """The stragglers of a session (``WorkerComparison.stragglers``), with why they are slow."""
    if not stragglers:
        return html.P("No straggler: every worker's median step is within 10% of the typical one.",
                      className="muted", id="stragglers")
    return html.Ul([html.Li([html.B(s.worker), f" is a straggler: its median step takes "
                             f"{format_duration(s.median_step_us)}, {format_duration(s.slower_by_us)} more than the "
                             f"typical worker, mostly from ", html.Code(s.excess_cause),
                             f" ({format_duration(s.excess_cause_us_per_step)} more per step than the median "
                             f"worker); its main idle cause in steps is ", html.Code(s.main_cause),
                             f" ({format_duration(s.main_cause_us_per_step)} of device time per step)."])
                    for s in stragglers],
                   id="stragglers")


def sessions_table(rows: list[dict]) -> html.Table:
    head = html.Tr([html.Th(h) for h in ("Session", "Date", "Workers", "Duration", "Device idle", "Median step")])
    body = []
    for row in rows:
        if row["error"]:
            figures = [html.Td(row["error"], colSpan=3, className="row-error")]
        else:
            step = row["step_median_us"]
            figures = [html.Td(format_ms(row["duration_us"])), html.Td(f"{row['idle_pct']:.1f}%"),
                       html.Td(format_ms(step) if step is not None else "no steps")]
        body.append(html.Tr([html.Td(dcc.Link(row["run"], href=session_href(row["run"]), className="session-link")),
                             html.Td(row["date"]), html.Td(str(row["workers"])), *figures]))
    return html.Table([html.Thead(head), html.Tbody(body)], id="sessions-table", className="table")
