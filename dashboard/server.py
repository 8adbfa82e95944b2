"""Serve the dashboard: ``xlaprof dashboard --logdir DIR [--host 127.0.0.1] [--port 8050]``.

Contract: ``serve(logdir, host=, port=, start_page=)`` blocks serving the app of
``create_app(logdir)`` (requests are answered on threads of their own) until a ``KeyboardInterrupt``
reaches the calling thread: Ctrl-C, or the CLI's SIGINT/SIGTERM handler (``cli.Interrupted``), which
stops the server and goes on up, so that ``xlaprof dashboard`` says "interrupted" and exits 130 or
143 as every command does. It binds 127.0.0.1 unless told
otherwise, prints the URL to open (of ``start_page``, a path below the root) once, and nothing of
Dash's, Flask's or Werkzeug's start-up banners, and prints a warning on stderr when the address is
reachable from other machines (the dashboard has no authentication). A missing
``dash`` raises ``MissingExtraError`` naming the install command; an address it cannot listen on
(``check_port``), a bad Dask scheduler address or connect timeout (``xlaprof.dask_tasks``) raise
``XlaprofError`` before anything else happens. ``allow_remote_capture``: the capture form may name
any host (by default only this machine's workers: ``data.capture_job``).
"""
from __future__ import annotations

import ipaddress
import logging
import socket
import sys
import threading

from xlaprof.dask_tasks import connect_timeout_s, scheduler_address
from xlaprof.errors import MissingExtraError, XlaprofError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def check_port(host: str, port: int) -> None:
    """Raise ``XlaprofError`` now, with the fix, if the dashboard could not listen there."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise XlaprofError(f"the dashboard cannot listen on {host}:{port} ({exc.strerror}): "
                           f"pick another port with --port") from None


def serve(logdir: str, *, host: str = "127.0.0.1", port: int = 8050, start_page: str = "",
          scheduler: str | None = None, allow_remote_capture: bool = False) -> None:
    try:
        from dashboard.app import create_app
        from dashboard.data.analysis_cache import AnalysisCache
        from dashboard.state import AppState
    except ImportError as exc:
        raise MissingExtraError("The dashboard", exc.name or "dash", "dashboard") from None
    check_port(host, port)
    scheduler_address(scheduler)  # a bad scheduler address or connect timeout: one line now, not per request
    connect_timeout_s()
    app = create_app(logdir, AppState(str(logdir), AnalysisCache(scheduler=scheduler),
                                      allow_remote_capture=allow_remote_capture))
    if not is_loopback(host):
        print(f"xlaprof: warning: the dashboard listens on {host}, reachable from other machines, and has "
              f"no authentication: anyone who can reach port {port} can browse {logdir}", file=sys.stderr)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    shown = f"[{shown}]" if ":" in shown else shown  # an IPv6 literal in a URL
    print(f"xlaprof dashboard: serving {logdir} at http://{shown}:{port}/{start_page.lstrip('/')} "
          f"(Ctrl-C to stop)", flush=True)
    # Werkzeug logs every request at INFO; the terminal should show the URL and problems only.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from werkzeug.serving import make_server

    # What Dash's app.run does for debug=False, without its banner and Flask's: the URL is ours.
    app.enable_dev_tools(debug=False)
    server = make_server(host, port, app.server, threaded=True)
    # Served from a thread: Werkzeug's loop swallows KeyboardInterrupt, so the signal that stops the
    # server would be lost to the caller; this thread only waits, and the signal's exception goes on up.
    loop = threading.Thread(target=server.serve_forever, name="xlaprof-dashboard", daemon=True)
    loop.start()
    try:
        while loop.is_alive():
            loop.join(0.5)
    finally:
        server.shutdown()
        server.server_close()
