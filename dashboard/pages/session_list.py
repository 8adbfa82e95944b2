"""The sessions page: every session of the logdir, refreshed so new captures appear without a restart.

Contract: ``layout(state)`` is the page: the capture form (``sections.capture``), then with two sessions or more, the trend of idle share and
median step time across them (``views.trend``, id ``trend-chart``) and a link to the compare
page (``compare-link``); then the sessions table. ``register(app, state)`` adds its callback,
which lists the logdir again every ``REFRESH_S`` seconds (a listing reads directory entries,
manifests and the logdir's session index; a session's figures are computed only when its files
changed, so neither a refresh nor a restart re-reads an unchanged capture). A session that
cannot be analysed shows its error in its row only.
"""
from __future__ import annotations

from dash import Dash, Input, Output, dcc, html

from dashboard.components import COMPARE_PATH, legend, message, sessions_table
from dashboard.figures import trend_chart, trend_items
from dashboard.sections import capture as capture_section
from dashboard.state import AppState
from dashboard.views.overview import session_row
from dashboard.views.trend import MIN_SESSIONS, trend_series
from xlaprof.errors import XlaprofError

REFRESH_S = 5


def _listing(state: AppState) -> html.Div:
    try:
        listed = state.listing()
    except XlaprofError as exc:  # a logdir-wide problem, e.g. a manifest that is not JSON
        return message("session-error", "The logdir could not be listed", str(exc))
    if not listed:
        return html.P(["No sessions in ", html.Code(state.logdir), " yet. Capture one with ",
                       html.Code(f"xlaprof capture --logdir {state.logdir} --port 9012"),
                       "; it will appear here."], className="muted", id="no-sessions")
    series = trend_series(listed)
    return html.Div([
        html.Div([html.H3("Trend across sessions"), legend(trend_items()),
                  dcc.Graph(id="trend-chart", figure=trend_chart(series).to_dict(), config={"displaylogo": False})],
                 id="trend-section") if len(series) >= MIN_SESSIONS else None,
        html.P(dcc.Link("Compare two sessions: before and after", href=COMPARE_PATH, id="compare-link"))
        if len(listed) > 1 else None,
        sessions_table([session_row(row) for row in listed]),
    ])


def layout(state: AppState) -> html.Div:
    return html.Div([
        html.H2("Sessions"),
        html.P(["Logdir ", html.Code(state.logdir), f". The list refreshes every {REFRESH_S} s."],
               className="muted"),
        capture_section.section(state),
        html.Div(_listing(state), id="sessions-listing"),
        dcc.Interval(id="sessions-refresh", interval=REFRESH_S * 1000),
    ], className="section")


def register(app: Dash, state: AppState) -> None:
    @app.callback(Output("sessions-listing", "children"), Input("sessions-refresh", "n_intervals"),
                  prevent_initial_call=True)
    def refresh(_n: int | None):
        return _listing(state)
