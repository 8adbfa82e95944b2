"""The session page's idle-by-stack section: the idle flame graph and idle time by Python line.

Contract: ``section(analysis, flame, figure)`` builds the section (id ``flame-section``): the icicle
(``flame``) of ``views.flame.idle_flame``, a Clear button (``flame-clear``), what is selected
(``flame-status``), and the "Idle time by Python line" table (``idle-lines-table``). A session
without stacks shows the analysis' note (``flame-empty``) instead of an empty chart.
``register(app, state, redraw)`` adds the callbacks: a click on a frame selects it (the hidden
``flame-selection`` holds its id as its children; a click on the top bar, its parent), Clear
selects nothing and draws the icicle as it opened;
a selection sets the gaps grid's filter on its hidden stack column (other columns' filters stay)
and redraws the timeline with only the selected frame's gap markers (``redraw(run, frame, workers)``,
from the session page; ``workers``: the pod's workers the timeline shows, ``sections.pod.SHOWN_WORKERS``).
"""
from __future__ import annotations

from collections.abc import Callable

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.figures import CAUSE_COLORS
from dashboard.grid import Column, ColumnKind, table_grid
from dashboard.sections.pod import SHOWN_WORKERS
from dashboard.state import AppState
from dashboard.views.flame import Flame, clicked_frame, frame_filter, frame_label
from dashboard.views.stacks import idle_line_rows
from xlaprof.analysis import SessionAnalysis
from xlaprof.errors import XlaprofError
from xlaprof.units import format_duration

PAGE_SIZE = 10
NUMBER, COUNT, SOURCE = ColumnKind.NUMBER, ColumnKind.COUNT, ColumnKind.SOURCE
LINE_COLUMNS = [Column("source", "Python line", SOURCE, grow=2), Column("code", "Code", grow=4, wrap=True),
                Column("cause", "Cause", grow=2, colors=dict(CAUSE_COLORS)),
                Column("idle_ms", "Idle (ms)", NUMBER, sort="desc"), Column("pieces", "Gap pieces", COUNT),
                Column("called_from", "Called from", SOURCE, grow=2), Column("spans", "Spans", grow=2, wrap=True)]
OPTIONAL = {"code", "called_from"}  # columns shown only when a row has a value (a readable file, a library line)
PICK_FRAME = "Click a frame to see only its gaps."
NO_STACKS = "No gap has a sampled Python stack in this capture."
GRAPH_CONFIG = {"displaylogo": False, "displayModeBar": False}


def section(analysis: SessionAnalysis, flame: Flame, figure: dict | None) -> html.Div:
    rows = idle_line_rows(analysis)
    notes = [html.P(note, className="muted flame-note") for note in flame.notes]
    if not flame.nodes:
        body = [html.P(" ".join(flame.notes) or NO_STACKS, id="flame-empty", className="muted empty")]
    else:
        unplaced = ([html.P(f"{format_duration(flame.unplaced_us)} of idle time has no Python line (no stack "
                            f"was sampled then, or only torch/Python frames) and is not drawn.", className="muted")]
                    if flame.unplaced_us > 0 else [])
        summed = ([html.P(f"{flame.summed} smaller frames are summed into 'smaller frames' boxes.", className="muted")]
                  if flame.summed else [])
        body = [
            html.Div([html.Button("Clear", id="flame-clear", className="button"),
                      html.Span(PICK_FRAME, id="flame-status")], className="toolbar"),
            dcc.Graph(id="flame", figure=figure, config=GRAPH_CONFIG), *unplaced, *summed, *notes,
            html.H3("Idle time by Python line"),
            table_grid("idle-lines-table", [c for c in LINE_COLUMNS if c.field not in OPTIONAL or any(
                r[c.field] for r in rows)], rows, page_size=PAGE_SIZE, empty=NO_STACKS),
        ]
    return html.Div([
        html.H2("Idle time by Python stack"),
        html.P("Each box is a Python frame, outermost at the top, as wide as the device idle time of the gaps "
               "whose sampled stack passes through it, and coloured by the cause of most of that time. Click a "
               "frame to zoom into it and to keep only its gaps in the timeline and the gaps table; Clear shows "
               "every gap again.", className="muted"),
        # The selected frame's id. Not a dcc.Store: a Store in memory brings back, as it mounts, the value
        # it held on the last page that had it, which would filter this session by another's frame.
        html.Div(id="flame-selection", hidden=True),
        *body,
    ], className="section", id="flame-section")


def register(app: Dash, state: AppState, redraw: Callable[[str, str | None, object], tuple]) -> None:
    @app.callback(Output("flame-selection", "children"), Output("flame", "figure"),
                  Input("flame", "clickData"), Input("flame-clear", "n_clicks"), State("flame-selection", "children"),
                  State("session-run", "data"), prevent_initial_call=True)
    def select(click, _clear, selected, run):
        try:
            flame = state.flame(run)
        except XlaprofError:
            return None, no_update
        if ctx.triggered_id == "flame-clear":  # the icicle drawn again as it opened
            return None, state.flame_figure(run)
        frame = clicked_frame(click, selected if isinstance(selected, str) else flame.top)
        if frame is None:
            raise PreventUpdate
        return frame, no_update

    @app.callback(Output("gaps-table", "filterModel"), Output("timeline", "figure", allow_duplicate=True),
                  Output("timeline-status", "children", allow_duplicate=True), Output("flame-status", "children"),
                  Input("flame-selection", "children"), State("gaps-table", "filterModel"),
                  State("session-run", "data"), State(SHOWN_WORKERS, "children"), prevent_initial_call=True)
    def apply(frame, model, run, workers):
        model = {k: v for k, v in (model if isinstance(model, dict) else {}).items() if k != "stack"}
        wanted = frame_filter(frame if isinstance(frame, str) else None)
        if wanted is not None:
            model["stack"] = wanted
        figure, status = redraw(run, frame if wanted is not None else None, workers)
        said = f"Showing only the gaps under {frame_label(frame)}." if wanted is not None else PICK_FRAME
        return model, figure, status, said
