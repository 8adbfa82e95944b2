"""The capture form of the sessions page: capture a profile without going back to a terminal.

Contract: ``section(state)`` is the form (id ``capture-section``): hosts (``capture-hosts``:
``localhost``, or ``host:port`` items), the default port (``capture-port``), the duration in
seconds (``capture-duration``) and a run name (``capture-name``), the button ``capture-start`` and
the status line ``capture-status``. It states the address rule (``data.capture_job``: this
machine's workers only, unless the server was started with ``--allow-remote-capture``).
``register(app, state)``: the button checks the form and starts the capture in the server
(``AppState.captures``, the same capture as ``xlaprof capture``); a bad field, a refused host or a
capture already running shows one line (``capture-error``) and starts nothing. While it records,
``capture-status`` shows the seconds recorded of the duration (``capture-progress``); when it is
done the browser opens the new session's page, and a capture that failed shows the CLI's one line.
"""
from __future__ import annotations

from dash import Dash, Input, Output, State, dcc, html, no_update

from dashboard.components import session_href
from dashboard.data.capture_job import MAX_DURATION_S, capture_request
from dashboard.state import AppState
from xlaprof.errors import XlaprofError

POLL_MS = 500  # how often the page asks how far the capture is


def section(state: AppState) -> html.Details:
    rule = ("Any host may be captured: this server was started with --allow-remote-capture."
            if state.allow_remote_capture else
            "Only workers on this machine (localhost) can be captured from here; start the dashboard with "
            "--allow-remote-capture to capture other hosts.")
    field = lambda label, control, size="": html.Label([label, control], className=f"capture-field {size}")  # noqa: E731
    return html.Details([
        html.Summary("Capture a profile"),
        html.P(["Records every worker's profiler server (started in the worker with ",
                html.Code("xlaprof.start_server(9012)"), ") for the duration, like ",
                html.Code("xlaprof capture"), ", and opens the new session. ", rule], className="muted"),
        html.Div([
            field("Hosts", dcc.Input(id="capture-hosts", type="text", value="localhost", debounce=False,
                                     placeholder="localhost, or host:port, ...")),
            field("Port", dcc.Input(id="capture-port", type="number", value=9012, min=1, max=65535), "narrow"),
            field("Duration (s)", dcc.Input(id="capture-duration", type="number", value=2, min=0.1,
                                            max=MAX_DURATION_S, step=0.1), "narrow"),
            field("Run name", dcc.Input(id="capture-name", type="text", value="", placeholder="a timestamp")),
            html.Button("Capture", id="capture-start", className="button"),
        ], className="capture-form toolbar"),
        html.Div(id="capture-status"),
        dcc.Store(id="capture-job"),
        dcc.Interval(id="capture-poll", interval=POLL_MS, disabled=True),
    ], id="capture-section", className="capture")


def register(app: Dash, state: AppState) -> None:
    @app.callback(Output("capture-job", "data"), Output("capture-poll", "disabled"),
                  Output("capture-status", "children"), Input("capture-start", "n_clicks"),
                  State("capture-hosts", "value"), State("capture-port", "value"),
                  State("capture-duration", "value"), State("capture-name", "value"), prevent_initial_call=True)
    def start(_clicks, hosts, port, duration, name):
        try:
            request = capture_request(hosts, port, duration, name, state.allow_remote_capture)
            job = state.captures.start(request)
        except XlaprofError as exc:
            return None, True, _error(str(exc))
        return job, False, _progress(0.0, request.duration_s)

    @app.callback(Output("capture-status", "children", allow_duplicate=True),
                  Output("capture-poll", "disabled", allow_duplicate=True), Output("url", "pathname"),
                  Input("capture-poll", "n_intervals"), State("capture-job", "data"), prevent_initial_call=True)
    def poll(_n, job):
        status = state.captures.status(job)
        if status is None:
            return no_update, True, no_update
        if status.state == "running":
            return _progress(status.elapsed_s, status.duration_s), False, no_update
        if status.state == "failed":
            return _error(status.error or "the capture failed"), True, no_update
        href = session_href(status.run)
        return html.P(["Captured ", dcc.Link(status.run, href=href), "; opening it."], id="capture-done"), True, href


def _progress(elapsed_s: float, duration_s: float) -> list:
    recording = min(elapsed_s, duration_s)
    text = (f"Recording: {recording:.1f} s of {duration_s:g} s" if elapsed_s < duration_s
            else "Recorded; the workers are sending their profiles")
    return [html.Progress(value=f"{recording:.2f}", max=f"{duration_s:g}", id="capture-progress"),
            html.Span(text, className="muted")]


def _error(line: str) -> html.P:
    return html.P(line, className="capture-error")
