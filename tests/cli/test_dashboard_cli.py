"""``xlaprof dashboard`` as a person starts it: the real command in a subprocess."""
from __future__ import annotations

from tests.support.dashboard_harness import DashboardServer, write_demo_logdir


def test_the_dashboard_prints_its_url_once_and_no_framework_banner(tmp_path):
    write_demo_logdir(tmp_path / "logdir", steps=4)
    with DashboardServer(tmp_path / "logdir", tmp_path) as server:
        pass  # started and answered
    output = server.output()
    assert output.count(f"http://127.0.0.1:{server.port}/") == 1, output
    assert "xlaprof dashboard: serving" in output
    for banner in ("Dash is running", "Serving Flask app", "Debug mode", "Running on", "development server"):
        assert banner not in output, output
