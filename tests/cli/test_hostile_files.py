"""Hostile files: a FIFO, a device, a directory or a broken symlink where a capture or a manifest
should be, a capture over the size limit, a malformed manifest, an unreachable remote logdir. Each
is one line and exit 2, promptly (no read of a FIFO ever starts, so nothing hangs), and a bad run
never costs the logdir: ``analyze LOGDIR`` and ``diff`` take the newest readable session with a
warning naming each bad run, and the listing and the dashboard show each bad run as a row of its
own."""
from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from dashboard.app import create_app
from tests.support.synthetic import training_capture, write_session
from tests.support.workers import run_cli
from tests.unit.test_dashboard_app import route
from xlaprof.analysis.pipeline.summary import logdir_figures
from xlaprof.session import list_sessions, profile_root

PROMPT_S = 15  # a hostile file is answered within this, on a loaded machine (a FIFO read would hang)

# name -> how to make the bad run in its directory, and what its one line says
BAD_RUNS = {
    "manifest_fifo": (lambda d, data: (_capture(d, data), os.mkfifo(d / "xlaprof.json")), "a FIFO"),
    "capture_fifo": (lambda d, data: os.mkfifo(d / "w_1.xplane.pb"), "a FIFO"),
    "capture_dir": (lambda d, data: os.mkdir(d / "w_1.xplane.pb"), "a directory, not a regular file"),
    "dangling": (lambda d, data: os.symlink(d / "gone", d / "w_1.xplane.pb"), "a symlink that leads nowhere"),
    "capture_loop": (lambda d, data: os.symlink(d / "w_1.xplane.pb", d / "w_1.xplane.pb"), "a symlink loop"),
    "yesterday": (lambda d, data: _with_manifest(d, data, '{"created_unix": "yesterday"}'),
                  'created_unix: must be seconds since the epoch (a number), not "yesterday"'),
    "oops": (lambda d, data: _with_manifest(d, data, '{"workers": "oops"}'), 'workers: must be a list of workers'),
    "bad_port": (lambda d, data: _with_manifest(d, data, '{"workers": [{"file": "w_1.xplane.pb", "port": "x"}]}'),
                 "workers[0].port: must be a port number or null"),
    "deep": (lambda d, data: _with_manifest(d, data, "[" * 200_000 + "]" * 200_000), "nested too deeply"),
}


def _capture(run_dir, data: bytes) -> None:
    (run_dir / "w_1.xplane.pb").write_bytes(data)


def _with_manifest(run_dir, data: bytes, text: str) -> None:
    _capture(run_dir, data)
    (run_dir / "xlaprof.json").write_text(text)


@pytest.fixture(scope="module")
def hostile_logdir(tmp_path_factory):
    """A readable session ``good``, older than a bad run of each kind and a run that is a symlink loop."""
    logdir = tmp_path_factory.mktemp("hostile") / "logs"
    data = training_capture(steps=20)
    write_session(str(logdir), "good", {"w_1": data}, {"created_unix": 1000.0})
    root = logdir / "plugins" / "profile"
    for run, (make, _) in BAD_RUNS.items():
        (root / run).mkdir()
        make(root / run, data)
    os.symlink(root / "run_loop", root / "run_loop")
    return logdir


def _one_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize("run", sorted(BAD_RUNS))
def test_each_bad_run_is_one_line_and_exit_2(hostile_logdir, run):
    path = profile_root(str(hostile_logdir)) + f"/{run}"
    started = time.monotonic()
    result = run_cli("analyze", path, timeout=60)
    assert time.monotonic() - started < PROMPT_S
    assert result.returncode == 2 and result.stdout == ""
    line = _one_line(result)
    assert line.startswith("xlaprof: error: ") and path in line and BAD_RUNS[run][1] in line, line


def test_a_logdir_with_bad_runs_opens_its_newest_readable_session(hostile_logdir):
    started = time.monotonic()
    result = run_cli("analyze", str(hostile_logdir), "--json", timeout=60)
    assert time.monotonic() - started < PROMPT_S
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session"].endswith(os.path.join("profile", "good"))
    warned = [line for line in result.stderr.splitlines() if line.startswith("xlaprof: skipping session ")]
    assert len(warned) == len(BAD_RUNS) + 1 and "Traceback" not in result.stderr
    for run, (_, reason) in BAD_RUNS.items():
        assert any(f"session {run}," in line and reason in line for line in warned), run
    diff = run_cli("diff", str(hostile_logdir / "plugins" / "profile" / "good"), str(hostile_logdir), "--json",
                   timeout=60)
    assert diff.returncode == 0, diff.stderr
    assert json.loads(diff.stdout)["after"]["session"].endswith("good")


def test_the_listing_and_the_dashboard_show_each_bad_run_in_its_own_row(hostile_logdir):
    listed = {s.run: s for s in list_sessions(str(hostile_logdir))}
    assert set(listed) == set(BAD_RUNS) | {"good", "run_loop"}
    assert listed["good"].error is None and "a symlink loop" in listed["run_loop"].error
    for run, (_, reason) in BAD_RUNS.items():
        assert reason in listed[run].error, (run, listed[run].error)
    rows = {row.session.run: row for row in logdir_figures(str(hostile_logdir))}
    assert rows["good"].figures is not None and rows["good"].figures.steps == 20
    assert all(rows[run].figures is None and rows[run].error for run in BAD_RUNS)
    client = create_app(str(hostile_logdir)).server.test_client()
    status, text = route(client, "/")
    assert status == 200 and "row-error" in text and "nested too deeply" in text
    assert all(f"/session/{run}" in text for run in listed)
    status, text = route(client, "/session/good")
    assert status == 200 and '"findings"' in text
    status, text = route(client, "/session/capture_fifo")
    assert status == 200 and "a FIFO" in text


def test_a_capture_over_the_size_limit_names_its_size_and_the_flag(tmp_path):
    path = tmp_path / "huge.xplane.pb"
    with open(path, "wb") as handle:  # sparse: 10 GiB on paper, nothing on disk
        handle.truncate(10 * 2**30)
    started = time.monotonic()
    result = run_cli("analyze", str(path), timeout=60)
    assert time.monotonic() - started < PROMPT_S and result.returncode == 2
    line = _one_line(result)
    assert "10.0 GiB, over the 8.0 GiB limit" in line and "--max-capture-size" in line
    small = tmp_path / "small.xplane.pb"
    small.write_bytes(training_capture(steps=5))
    result = run_cli("analyze", str(small), "--max-capture-size", "1KiB", timeout=60)
    assert result.returncode == 2 and "over the 1.0 KiB limit" in _one_line(result)


def _silent_server() -> tuple[socket.socket, list]:
    """A TCP server on 127.0.0.1 that accepts connections and never answers: an unreachable store."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, held


def test_an_unreachable_remote_logdir_fails_in_bounded_time_with_one_line():
    server, held = _silent_server()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/logs"
        started = time.monotonic()
        result = run_cli("analyze", url, "--remote-timeout", "2", timeout=60)
        elapsed = time.monotonic() - started
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert result.returncode == 2 and elapsed < PROMPT_S
    line = _one_line(result)
    assert url in line and "did not answer within 2 s" in line and "--remote-timeout" in line
