"""Build the Dash app: the page shell, the router, and every page's callbacks.

Contract: ``create_app(logdir, state=None)`` returns a ``dash.Dash`` serving
- ``/``: the sessions of the logdir (``pages.session_list``) and the capture form (``sections.capture``),
- ``/session/<run>``: one session (``pages.session``); ``?from_ms=&to_ms=`` opens the timeline
  on that range,
- ``/compare``: two sessions side by side (``pages.compare``); ``?before=RUN&after=RUN`` picks them,
- anything else: a not-found message.
The first page comes drawn in the layout (``/_dash-layout``, for the URL its request's Referer
names), so the browser shows it without a callback after the page loads; a click on a link draws
the next page through the router callback (as does the first page, when a layout request names
no URL). Plotly is the partial bundle ``assets/plotly-xlaprof.min.js`` (see ``plotly_bundle/``),
loaded with the page, so that ``dcc.Graph`` never fetches the full 4.8 MB one. No URL reaches a file: session ids go through
  ``logdir_guard`` (in ``AppState.entry``), and an unexpected failure while drawing a page shows
  one error on that page, never a traceback, while the rest of the app keeps working. A body over
  a few MB gets 413, a malformed callback request 400 (``request_guard``).
"""
from __future__ import annotations

import logging
from urllib.parse import unquote, urlsplit

from dash import Dash, Input, Output, dcc, html
from dash.exceptions import DependencyException
from flask import has_request_context, request

from dashboard import components as ui
from dashboard import request_guard
from dashboard.data.logdir_guard import printable
from dashboard.pages import compare as compare_page
from dashboard.pages import session as session_page
from dashboard.pages import session_list as session_list_page
from dashboard.sections import capture as capture_section
from dashboard.sections import graphs as graphs_section
from dashboard.state import AppState

log = logging.getLogger("xlaprof")


def create_app(logdir: str, state: AppState | None = None) -> Dash:
    state = state or AppState(str(logdir))
    app = Dash(__name__, title="xlaprof", update_title=None, suppress_callback_exceptions=True)
    app.layout = lambda: _shell(state)

    # The first page comes with the layout; this draws the pages a click on a link leads to (and the
    # first page when the layout's request did not say its URL: ``url`` then mounts without one and sets it).
    @app.callback(Output("page", "children"), Input("url", "pathname"), Input("url", "search"),
                  prevent_initial_call=True)
    def route(pathname, search):
        return page_for(state, pathname, search)

    # A request for a script of a library Dash does not know is a bad URL, not a server error.
    app.server.register_error_handler(DependencyException, lambda _exc: ("Not found", 404))
    session_list_page.register(app, state)
    capture_section.register(app, state)
    session_page.register(app, state)
    graphs_section.register(app, state)
    compare_page.register(app, state)
    request_guard.install(app)
    return app


def _shell(state: AppState) -> html.Div:
    """The app's layout: the top bar and the page of the URL the browser asks it for (the layout
    request's Referer), drawn here so that the first view needs no callback after the page loads."""
    url = urlsplit(request.referrer or "") if has_request_context() else None
    if not url or not url.path:
        return _page_shell(dcc.Location(id="url", refresh=False), None)
    search = f"?{url.query}" if url.query else ""
    # ``url`` holds the page's own location, so that it mounts without a change that would draw the page again.
    return _page_shell(dcc.Location(id="url", refresh=False, pathname=url.path, search=search),
                       page_for(state, url.path, search))


def _page_shell(location: dcc.Location, page: html.Div | None) -> html.Div:
    return html.Div([
        location,
        html.Header([dcc.Link("xlaprof", href="/", className="brand"),
                     html.Span("why is my device idle, and which line is to blame", className="tagline"),
                     dcc.Link("compare", href=ui.COMPARE_PATH, className="nav")],
                    className="topbar"),
        html.Main(page, id="page", className="page"),
    ])


def page_for(state: AppState, pathname: object, search: object) -> html.Div:
    path = pathname if isinstance(pathname, str) else "/"
    try:
        if path in ("", "/"):
            return session_list_page.layout(state)
        if path.rstrip("/") == ui.COMPARE_PATH:
            return compare_page.layout(state, search if isinstance(search, str) else "")
        if path.startswith(ui.SESSION_PREFIX):
            # The run's name, percent-decoded once as its link encoded it (session_href): "run with space".
            return session_page.layout(state, unquote(path[len(ui.SESSION_PREFIX):].rstrip("/")),
                                       search if isinstance(search, str) else "")
    except Exception as exc:  # a bug drawing one page must not take the app down
        log.exception("drawing %s failed", printable(path))
        return ui.message("session-error", "This page could not be drawn",
                          f"xlaprof failed while drawing it ({type(exc).__name__}: {printable(exc, 200)}); "
                          f"please report it.")
    return ui.message("not-found", "Page not found", f"There is no page at '{printable(path)}'.")
