"""A capture interrupted by Ctrl-C, or by a worker dying mid-capture, never leaves a session that
looks complete, and keeps what the other workers sent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.workers import REPO, DemoWorker, run_cli
from xlaprof.session import Session, list_sessions

pytestmark = pytest.mark.torch_xla


def test_ctrl_c_mid_capture_leaves_nothing_and_exits_130(live_worker, tmp_path):
    logdir = tmp_path / "logs"
    capture = subprocess.Popen(
        [sys.executable, "-m", "xlaprof", "capture", "--port", str(live_worker.port), "--duration", "5",
         "--logdir", str(logdir)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)  # well inside the 5 s window
    capture.send_signal(signal.SIGINT)
    out, err = capture.communicate(timeout=60)
    assert capture.returncode == 130, err
    assert err.strip().splitlines()[-1] == "xlaprof: interrupted" and "Traceback" not in err
    assert out == ""
    assert list_sessions(str(logdir)) == []
    assert not logdir.exists()  # interrupted before anything was kept: nothing created, no staging left behind


def test_a_worker_killed_mid_capture_costs_only_itself(live_worker, tmp_path):
    doomed = DemoWorker("--fixed-shapes", debug_file=str(tmp_path / "doomed.txt"))
    try:
        capture = subprocess.Popen(
            [sys.executable, "-m", "xlaprof", "capture", "--host",
             f"localhost:{live_worker.port},localhost:{doomed.port}", "--duration", "4", "--logdir", str(tmp_path)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)
        doomed.process.kill()
        out, err = capture.communicate(timeout=120)
    finally:
        doomed.stop()
    assert capture.returncode == 3, err
    assert f"localhost:{doomed.port}" in err
    session = Session.load(out.strip().splitlines()[-1])
    status = {w["port"]: w for w in session.manifest["workers"]}
    assert status[live_worker.port]["status"] == "ok" and status[doomed.port]["status"] == "failed"
    assert [w.port for w in session.workers] == [live_worker.port]
    assert session.workers[0].space.event_count > 0


def test_analyze_never_modifies_its_input(real_capture_path):
    before = (os.path.getsize(real_capture_path), os.path.getmtime(real_capture_path))
    with open(real_capture_path, "rb") as handle:
        content = handle.read()
    assert run_cli("analyze", real_capture_path, "--json").returncode == 0
    assert (os.path.getsize(real_capture_path), os.path.getmtime(real_capture_path)) == before
    with open(real_capture_path, "rb") as handle:
        assert handle.read() == content
