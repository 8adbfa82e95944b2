"""The session page: the answer first (verdict, idle by cause, top findings), then overview cards, pod,
timeline, every finding, idle by stack, gaps, compiles, graphs, steps, workers.

Contract: ``layout(state, run, search)`` builds the page of session ``run``: a clear not-found
message for an id that names no session (hostile ids included), one clear error for a session
that fails to load, else the full page. ``search`` may carry ``?from_ms=..&to_ms=..`` (malformed
values are ignored). ``register(app, state)`` adds the callbacks: zoom, pan, reset and a click
on a gap row redraw the timeline from ``timeline_view.view`` for the new range (detail is fetched
from the server as the range narrows; with a flame graph frame selected, only that frame's gap
markers); a click on a gap row also shows the gap's Python stack in the panel beside the timeline
(``stack-panel``, from ``views.stacks.gap_stack``); the gaps grid is paged, sorted and filtered on
the server by ``gap_table.gap_page``; a click on a compile row shows what changed vs the previous
graph of its place (``views.graphs.compile_detail``). The idle flame graph section is
``sections.stacks``, the compiled graphs section ``sections.graphs``, the pod section (workers x steps,
sessions of 2+ workers) ``sections.pod``.
Callbacks only ask xlaprof and draw.
"""
from __future__ import annotations

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import components as ui
from dashboard.figures import (
    CAUSE_COLORS,
    IDLE_CAUSES,
    idle_donut,
    legend_items,
    step_chart,
    timeline_figure,
    worker_chart,
)
from dashboard.grid import MAX_MEASURED_ROWS, Column, ColumnKind, rows_response, server_grid, table_grid
from dashboard.sections import graphs as graphs_section
from dashboard.sections import pod as pod_section
from dashboard.sections import stacks as stacks_section
from dashboard.state import AppState
from dashboard.views.axis import AXIS_UNIT_US
from dashboard.views.flame import frame_gaps, frame_label
from dashboard.views.gap_table import gap_page, gap_range
from dashboard.views.graphs import compile_detail
from dashboard.views.overview import compile_rows, step_series, worker_rows
from dashboard.views.stacks import gap_stack
from dashboard.views.timeline import (
    SessionTimeline,
    TimelineView,
    ViewConfig,
    only_gaps,
    parse_range_query,
    parse_relayout,
    view,
)
from xlaprof.errors import RunNotFoundError, XlaprofError

PAGE_SIZE = 15
NUMBER, SOURCE = ColumnKind.NUMBER, ColumnKind.SOURCE
GAP_COLUMNS = [Column("worker", "Worker", min_px=130), Column("device", "Device"), Column("start_ms", "Start (ms)", NUMBER),
               Column("dur_ms", "Duration (ms)", NUMBER, sort="desc"),
               Column("cause", "Cause", grow=2, colors=dict(CAUSE_COLORS)),
               Column("span", "Span", grow=2), Column("source", "Source", SOURCE, grow=2),
               Column("stack", "Python stack", hidden=True)]
COMPILE_COLUMNS = [Column("worker", "Worker", min_px=130), Column("start_ms", "Start (ms)", NUMBER),
                   Column("dur_ms", "Duration (ms)", NUMBER), Column("span", "Span", grow=2, wrap=True),
                   Column("source", "Source", SOURCE, grow=2), Column("graph", "Graph", grow=2, wrap=True, tooltip="xla"),
                   Column("cause", "Cause", grow=2, wrap=True, tooltip="cause_tip"),
                   Column("changed", "Changed vs previous graph", grow=3, wrap=True)]
TRIGGER = Column("trigger", "Triggered at", SOURCE, grow=2)  # torch_xla's line, shown where a debug file gave one
GRAPH_CONFIG = {"displaylogo": False, "scrollZoom": True}
GONE = "This session is no longer available: reload the page."


def layout(state: AppState, run: str, search: str | None) -> html.Div:
    try:
        entry = state.entry(run)
    except RunNotFoundError as exc:
        return ui.message("not-found", "Session not found", str(exc))
    except XlaprofError as exc:
        return ui.message("session-error", "This session could not be loaded", str(exc))
    analysis, ov = entry.analysis, state.overview(run)
    rng = parse_range_query(search)
    (lanes, note), flame = pod_section.timeline_lanes(state, run), state.flame(run)
    # The figures of the whole session are the same for every visit: built once per analysis.
    figures = entry.derived("page-figures", lambda _: _page_figures(analysis, ov, lanes, state.view_config, note))
    timeline, status = (_timeline(lanes, rng, state.view_config, note=note) if rng
                        else (figures["timeline"], figures["status"]))
    causes = [c for c in IDLE_CAUSES if analysis.idle_by_cause.get(c, 0.0) > 0]
    compiles = compile_rows(analysis)
    return html.Div([
        dcc.Store(id="session-run", data=run),
        html.Div([html.H2(run, id="session-title"),
                  html.Span(", ".join(w.worker.label for w in analysis.workers), className="muted")],
                 className="session-head"),
        html.Div([html.P(e, className="warning") for e in analysis.errors]) if analysis.errors else None,
        pod_section.shown_workers(state, run),
        ui.answer(state.verdict(run), ov, analysis.findings),
        html.Div([ui.device_card(ov),
                  ui.card("Idle by cause", ui.legend(legend_items(causes)),
                          dcc.Graph(figure=figures["donut"], config={"displayModeBar": False}), class_name="card-idle"),
                  ui.compiles_card(ov), ui.reads_card(ov),
                  ui.fallbacks_card(ov, any(w.metrics for w in analysis.workers))], className="cards"),
        pod_section.section(state, run),
        html.Div([
            html.H2("Timeline"),
            html.P("Drag to zoom into a time range (the server sends detail as you zoom), double-click or "
                   "Reset to see everything; pan with the modebar. Idle time is coloured by its cause.",
                   className="muted"),
            html.Div([html.Button("Reset zoom", id="timeline-reset", className="button"),
                      html.Span(status, id="timeline-status")], className="toolbar"),
            ui.legend(legend_items(["busy", *causes, "span"]), "timeline-legend"),
            html.Div([
                html.Div(dcc.Loading(dcc.Graph(id="timeline", figure=timeline, config=GRAPH_CONFIG), delay_show=300),
                         className="timeline-graph"),
                html.Aside(ui.stack_panel(None), id="stack-panel", className="stack-panel"),
            ], className="timeline-row"),
        ], className="section", id="timeline-section"),
        ui.findings_list(analysis.findings),
        stacks_section.section(analysis, flame, state.flame_figure(run)),
        html.Div([
            html.H2("Idle gaps"),
            html.P("Every idle piece of every device. Click a header to sort (shift-click for more columns); "
                   "type under a header to filter (e.g. 5 under Duration keeps gaps of 5 ms or more, compile "
                   "under Cause); click a row to zoom the timeline to it and see its Python stack beside it; hover "
                   "a source for its full path. Sources are the Python line of the gap's sampled stack, else its "
                   "span's line.",
                   className="muted"),
            server_grid("gaps-table", GAP_COLUMNS, page_size=PAGE_SIZE, empty="No gap matches these filters.",
                        values={column: labels[:MAX_MEASURED_ROWS] for column, (_, labels) in state.gaps(run).labels.items()}),
            html.P(f"{len(state.gaps(run)):,} gaps", id="gaps-info", className="muted"),
        ], className="section", id="gaps-section"),
        html.Div([
            html.H2("Compiles"),
            ui.recompiles_list(analysis.recompiles),
            table_grid("compiles-table", _compile_columns(compiles), compiles, page_size=PAGE_SIZE,
                       empty="No compilation during this capture: the graphs the workers ran were compiled before it "
                             "started (or came from the persistent compilation cache)."),
            html.Div(ui.compile_detail(None), id="compile-detail", className="detail"),
        ], className="section", id="compiles-section"),
        graphs_section.section(analysis),
        html.Div([html.H2("Step time"),
                  ui.legend(legend_items(["busy", *causes])) if figures["steps"] else None,
                  dcc.Graph(id="steps-chart", figure=figures["steps"]) if figures["steps"]
                  else html.P("No step spans in this capture: wrap the loop body in xlaprof.step(n).",
                              className="muted")], className="section", id="steps-section"),
        html.Div([html.H2("Workers compared"), ui.legend(legend_items(["busy", *causes])),
                  dcc.Graph(id="workers-chart", figure=figures["workers"]),
                  ui.stragglers_list(analysis.comparison.stragglers)],
                 className="section", id="workers-section") if figures["workers"] else None,
    ], id="session-page")


def _compile_columns(rows: list[dict]) -> list[Column]:
    """The compiles table's columns: torch_xla's trigger line only where its debug file gave one."""
    return COMPILE_COLUMNS[:-1] + [TRIGGER] * any(r["trigger"] for r in rows) + COMPILE_COLUMNS[-1:]


def _page_figures(analysis, ov, lanes: SessionTimeline, config: ViewConfig, note: str) -> dict:
    """The session's figures at full range, as plain dicts (cheap to send again). It runs under
    the cache entry's lock, so it takes its inputs rather than asking the state for them."""
    series, workers = step_series(analysis), worker_rows(analysis)
    timeline, status = _timeline(lanes, (None, None), config, note=note)
    return {"timeline": timeline, "status": status, "donut": idle_donut(ov).to_dict(),
            "steps": step_chart(series).to_dict() if series.step.size else None,
            "workers": worker_chart(workers).to_dict() if len(workers) > 1 else None}


def _timeline(lanes: SessionTimeline, rng: tuple, config: ViewConfig, frame: str | None = None,
              note: str = "") -> tuple[dict, str]:
    tview = view(lanes, *rng, config=config)
    return timeline_figure(tview).to_dict(), _status(tview, frame) + note


def _status(tview: TimelineView, frame: str | None = None) -> str:
    text = (f"{tview.x0 / AXIS_UNIT_US:.3f} – {tview.x1 / AXIS_UNIT_US:.3f} ms, {len(tview):,} bars")
    if tview.binned_lanes:
        text += f"; {tview.binned_lanes} busy lane(s) aggregated, zoom in for single events"
    if frame:
        text += f"; idle time of the gaps under {frame_label(frame)} only"
    return text


def _redraw(state: AppState, run: str, rng: tuple | None, frame: object = None, workers: object = None) -> tuple:
    """The timeline figure and status for ``rng`` ((None, None): everything; None: no change),
    with only the gap markers under the flame graph frame ``frame`` (None: every gap), and in a pod
    only the lanes of ``workers`` (``pod_section.timeline_lanes``)."""
    if rng is None:
        raise PreventUpdate
    try:
        lanes, note = pod_section.timeline_lanes(state, run, workers)
        keep = frame_gaps(state.gaps(run), frame if isinstance(frame, str) else None)
        if keep is None:
            return _timeline(lanes, rng, state.view_config, note=note)
        return _timeline(only_gaps(lanes, keep), rng, state.view_config, frame, note)
    except XlaprofError:  # the session vanished or broke since the page was drawn
        return no_update, GONE


def register(app: Dash, state: AppState) -> None:
    # Two callbacks drawing the same figure: Plotly reports an autosize relayout just after the
    # first draw, and in one callback it would cancel a gap click made in that instant.
    @app.callback(Output("timeline", "figure"), Output("timeline-status", "children"),
                  Input("timeline", "relayoutData"), Input("timeline-reset", "n_clicks"),
                  State("session-run", "data"), State("flame-selection", "children"),
                  State(pod_section.SHOWN_WORKERS, "children"), prevent_initial_call=True)
    def zoom(relayout, _reset, run, frame, workers):
        parsed = (None, None) if ctx.triggered_id == "timeline-reset" else parse_relayout(relayout)
        return _redraw(state, run, (None, None) if parsed == "reset" else parsed, frame, workers)

    @app.callback(Output("timeline", "figure", allow_duplicate=True),
                  Output("timeline-status", "children", allow_duplicate=True), Output("stack-panel", "children"),
                  Output(pod_section.SHOWN_WORKERS, "children", allow_duplicate=True),
                  Input("gaps-table", "cellClicked"), State("session-run", "data"),
                  State("flame-selection", "children"), State(pod_section.SHOWN_WORKERS, "children"),
                  prevent_initial_call=True)
    def show_gap(clicked, run, frame, workers):
        row_id = clicked.get("rowId") if isinstance(clicked, dict) else None
        try:
            gaps = state.gaps(run)
            rng, stack = gap_range(gaps, row_id), gap_stack(state.entry(run).analysis, gaps, row_id)
            workers = pod_section.with_gap_worker(state, run, workers, row_id)  # its lanes shown
        except XlaprofError:
            return no_update, GONE, no_update, no_update
        # a bad row id: _redraw changes nothing
        return *_redraw(state, run, rng, frame, workers), ui.stack_panel(stack), workers

    @app.callback(Output("gaps-table", "getRowsResponse"), Output("gaps-info", "children"),
                  Input("gaps-table", "getRowsRequest"), State("session-run", "data"), prevent_initial_call=True)
    def gaps_page(request, run):
        try:
            result = gap_page(state.gaps(run), request)
        except XlaprofError:  # the session vanished or broke since the page was drawn
            return no_update, GONE
        info = f"{result.matching:,} gaps" + (f" ({result.problem})" if result.problem else "")
        return rows_response(result.rows, result.matching), info

    stacks_section.register(app, state, lambda run, frame, workers: _redraw(state, run, (None, None), frame, workers))
    pod_section.register(app, state, lambda run, rng, frame, workers: _redraw(state, run, rng, frame, workers))

    @app.callback(Output("compile-detail", "children"), Input("compiles-table", "cellClicked"),
                  State("session-run", "data"), prevent_initial_call=True)
    def show_compile(clicked, run):
        row = clicked.get("rowId") if isinstance(clicked, dict) else None
        try:
            analysis = state.entry(run).analysis
        except XlaprofError:
            return [html.P(GONE)]
        return ui.compile_detail(compile_detail(analysis, compile_rows(analysis), row))
