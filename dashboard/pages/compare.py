"""The compare page: two sessions of the logdir side by side, before and after a change.

Contract: ``layout(state, search)`` builds the page at ``/compare``: two pickers of the logdir's
sessions that read (a bad run is not offered; ``compare-before``, ``compare-after``), set from ``?before=RUN&after=RUN`` (a run the
logdir does not list falls back to the default pair: the second newest before, the newest
after), and the body (``compare-body``): the verdict (``compare-verdict``, the line ``xlaprof
diff`` prints), the step-time figures with their intervals, the steps each window held and its
idle time per step and per second (``compare-rate-lines``), the busy and idle time by cause of
both side by side per step (``compare-causes``; per second of window without steps), their
step-time distributions overlaid as shares of their steps, with the counts in the key
(``compare-steps``), and the findings matched across them (``compare-findings``: resolved, new,
changed first). With fewer than two sessions, a message says what to capture. ``register(app,
state)``: picking another session redraws the body; a session that cannot be loaded shows its
error there. The numbers come from ``views.compare``; callbacks only ask it and draw.
"""
from __future__ import annotations

from dash import Dash, Input, Output, dcc, html

from dashboard import components as ui
from dashboard.figures import cause_bars, side_items, step_distributions
from dashboard.grid import Column, ColumnKind, table_grid
from dashboard.state import AppState
from dashboard.views.compare import parse_pair
from xlaprof.errors import RunNotFoundError, XlaprofError

PAGE_SIZE = 15
NUMBER = ColumnKind.NUMBER
STATUS_COLORS = {"resolved": "#2e7d32", "new": "#c0392b", "changed": "#d68910", "unchanged": "#7f8c8d"}
FINDING_COLUMNS = [Column("status", "Status", colors=STATUS_COLORS), Column("kind", "Kind", grow=2),
                   Column("span", "Span", grow=2), Column("source", "Source", ColumnKind.SOURCE, grow=2),
                   Column("before_ms", "Lost before (ms)", NUMBER), Column("after_ms", "Lost after (ms)", NUMBER),
                   Column("change_ms", "Change (ms)", NUMBER)]
GRAPH_CONFIG = {"displaylogo": False}


def layout(state: AppState, search: str) -> html.Div:
    runs = [row.session.run for row in state.listing() if row.error is None]  # a bad run is not offered
    if len(runs) < 2:
        return ui.message("not-found", "Nothing to compare yet",
                          "The compare page needs two sessions in this logdir: capture the job, change it, "
                          "and capture it again.")
    before, after = parse_pair(search, runs)
    options = [{"label": run, "value": run} for run in runs]
    pickers = html.Div([
        html.Label(["Before", dcc.Dropdown(id="compare-before", options=options, value=before, clearable=False)],
                   className="picker"),
        html.Label(["After", dcc.Dropdown(id="compare-after", options=options, value=after, clearable=False)],
                   className="picker"),
    ], className="toolbar pickers")
    return html.Div([html.H2("Compare two sessions"), pickers, html.Div(_body(state, before, after), id="compare-body")],
                    className="section", id="compare-page")


def _body(state: AppState, before: object, after: object) -> list:
    try:
        view = state.compare(before, after)
    except RunNotFoundError as exc:
        return [ui.message("not-found", "Session not found", str(exc))]
    except XlaprofError as exc:
        return [ui.message("session-error", "These sessions could not be compared", str(exc))]
    return [
        html.P(view.verdict, id="compare-verdict", className="verdict"),
        html.Ul([html.Li(line) for line in view.step_lines], id="compare-step-lines", className="muted"),
        html.Ul([html.Li(line) for line in view.rate_lines], id="compare-rate-lines", className="muted"),
        html.Div([
            ui.card(f"Device time by cause, {view.unit}", ui.legend(side_items("before", "after")),
                    dcc.Graph(id="compare-causes", figure=cause_bars(view).to_dict(), config=GRAPH_CONFIG),
                    class_name="card-wide"),
            ui.card("Step time distribution (share of each session's steps)",
                    ui.legend(side_items(*(f"{side} ({values.size:,} steps)" for side, values in
                                           (("before", view.step_before_ms), ("after", view.step_after_ms))))),
                    dcc.Graph(id="compare-steps", figure=step_distributions(view).to_dict(), config=GRAPH_CONFIG),
                    html.P(f"The last bar counts every step over {view.overflow_ms:,.1f} ms.", className="muted")
                    if view.overflow_ms is not None else None, class_name="card-wide"),
        ], className="cards"),
        html.H3("Findings matched across the two (by kind and source line, else span)"),
        table_grid("compare-findings", FINDING_COLUMNS, view.finding_rows, page_size=PAGE_SIZE,
                   empty="Neither session has findings: the devices were never idle."),
    ]


def register(app: Dash, state: AppState) -> None:
    @app.callback(Output("compare-body", "children"), Input("compare-before", "value"),
                  Input("compare-after", "value"), prevent_initial_call=True)
    def pick(before, after):
        return _body(state, before, after)
