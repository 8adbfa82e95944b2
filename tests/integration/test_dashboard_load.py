"""Twenty people browsing one large session at once: no errors, and the session is read from disk
once, not once per request (the real dashboard in a subprocess, over HTTP on loopback)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.support.dash_requests import browse, live_callbacks
from tests.support.dashboard_harness import DashboardServer
from tests.support.synthetic import training_capture, write_session

CLIENTS = 20
ROUNDS = 2  # each client browses the session this many times


def test_twenty_concurrent_clients_get_answers_from_one_read(tmp_path):
    logdir = tmp_path / "logdir"
    run_dir = write_session(str(logdir), "big", {"localhost_9012": training_capture(steps=800, devices=4)})
    with DashboardServer(logdir, tmp_path, verbose=True) as server:
        callbacks = live_callbacks(server.url)

        def person(i: int):
            lo = 1.0 + i  # each zooms somewhere else
            return [r for _ in range(ROUNDS) for r in browse(server.url, "big", callbacks, (lo, lo + 5.0))]

        with ThreadPoolExecutor(CLIENTS) as pool:
            results = [r for person_results in pool.map(person, range(CLIENTS)) for r in person_results]
        output = server.output()
    statuses = [status for status, _ in results]
    assert len(statuses) == CLIENTS * ROUNDS * 6
    assert set(statuses) == {200}, [s for s in statuses if s != 200][:5]
    assert output.count(f"reading session {run_dir}") == 1, output[-2000:]
    assert "Traceback" not in output
