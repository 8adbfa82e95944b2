"""``xlaprof dashboard`` as a person starts it: the real command in a subprocess."""
from __future__ import annotations

import json
import signal
import urllib.request

from tests.support.dashboard_harness import DashboardServer, write_demo_logdir
from xlaprof.session.index import INDEX_NAME


def test_the_dashboard_prints_its_url_once_and_no_framework_banner(tmp_path):
    write_demo_logdir(tmp_path / "logdir", steps=4)
    with DashboardServer(tmp_path / "logdir", tmp_path) as server:
        pass  # started and answered
    output = server.output()
    assert output.count(f"http://127.0.0.1:{server.port}/") == 1, output
    assert "xlaprof dashboard: serving" in output
    for banner in ("Dash is running", "Serving Flask app", "Debug mode", "Running on", "development server"):
        assert banner not in output, output


def test_an_unreadable_index_is_rebuilt_and_signals_stop_it_with_130_or_143(tmp_path):
    logdir = tmp_path / "logdir"
    write_demo_logdir(logdir, steps=4)
    index = logdir / "plugins" / "profile" / INDEX_NAME
    index.write_text("[" * 200_000)  # nests past the JSON parser: stopped the dashboard with a RecursionError
    for signum, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        with DashboardServer(logdir, tmp_path) as server:
            request = urllib.request.Request(server.url + "/_dash-layout", headers={"Referer": server.url + "/"})
            with urllib.request.urlopen(request, timeout=120) as response:
                assert response.status == 200 and b"session-link" in response.read()
            assert json.loads(index.read_text())["sessions"]  # rebuilt from the sessions listed
            server.process.send_signal(signum)
            assert server.process.wait(timeout=30) == code
        output = server.output()
        assert output.rstrip().endswith("xlaprof: interrupted") and "Traceback" not in output, output
