"""A capture interrupted by Ctrl-C, or by a worker dying mid-capture, never leaves a session that
looks complete, and keeps what the other workers sent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from collectors.server import free_port
from tests.support.workers import REPO, DemoWorker, run_cli, wait_for_client
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


def _staged_leftovers(logdir) -> list[str]:
    root = logdir / "plugins" / "profile"
    return [n for n in os.listdir(root) if n.startswith(".") and not n.startswith(".xlaprof-index")] \
        if root.exists() else []


def _signal_when(capture: subprocess.Popen, logdir, moment: str, delay_s: float) -> None:
    """``moment`` "recording": ``delay_s`` after the capture client's log appears (the workers are
    being asked); "final write": as soon as the staging directory appears (the captures and the
    manifest being written), then ``delay_s`` later."""
    root = logdir / "plugins" / "profile"
    log_prefix = f"xlaprof-capture-{capture.pid}-"

    def started() -> bool:
        if moment == "recording":
            return any(f.startswith(log_prefix) for f in os.listdir(tempfile.gettempdir()))
        return root.exists() and any(n.endswith(".partial") for n in os.listdir(root))

    deadline = time.monotonic() + 60
    while capture.poll() is None and time.monotonic() < deadline and not started():
        time.sleep(0.002)
    time.sleep(delay_s)


@pytest.mark.parametrize("signum,moment,delay_s", [
    (signal.SIGTERM, "recording", 0.3), (signal.SIGINT, "final write", 0.0),
    (signal.SIGTERM, "final write", 0.0), (signal.SIGTERM, "final write", 0.005)])
def test_a_signal_at_any_moment_leaves_a_whole_session_or_none(live_worker, tmp_path, signum, moment, delay_s):
    """SIGTERM is handled as Ctrl-C: whatever the moment, the capture says "interrupted" and exits
    128+signal with nothing staged left behind, or (the signal came once the session was whole) the
    session is kept; it never dies by the signal and never leaves a half-written session."""
    logdir = tmp_path / "logs"
    capture = subprocess.Popen(
        [sys.executable, "-m", "xlaprof", "capture", "-p", str(live_worker.port), "-d", "1", "-o", str(logdir)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _signal_when(capture, logdir, moment, delay_s)
    if capture.poll() is None:
        capture.send_signal(signum)
    out, err = capture.communicate(timeout=60)
    assert capture.returncode in (0, 128 + signum), (capture.returncode, err)  # never < 0: killed by it
    assert "Traceback" not in err and _staged_leftovers(logdir) == []
    assert not [f for f in os.listdir(tempfile.gettempdir()) if f.startswith(f"xlaprof-capture-{capture.pid}-")]
    sessions = list_sessions(str(logdir))
    if capture.returncode:
        assert err.strip().splitlines()[-1] == "xlaprof: interrupted"
    else:
        assert out.strip().splitlines()[-1] == sessions[0].path
    assert len(sessions) <= 1
    for listed in sessions:  # a listed session is whole: its manifest and every capture read
        assert listed.error is None and listed.manifest["status"] == "complete"
        assert Session.load(listed.path).event_count > 0


def test_a_busy_worker_is_named_busy_and_hosts_come_from_a_file(live_worker, tmp_path):
    """A worker whose profiler server is serving another capture is "busy", not "no answer", with
    advice to wait or use another port (and to start a server only for the worker that had none);
    ``--host`` still works with a note."""
    first = subprocess.Popen(
        [sys.executable, "-m", "xlaprof", "capture", "--host", f"localhost:{live_worker.port}", "-d", "8",
         "-o", str(tmp_path / "first")], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_client(live_worker.port)  # the first capture records (its request is with the server)
    time.sleep(0.5)
    dead = free_port()
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"# the pod\nlocalhost:{live_worker.port}\nlocalhost:{dead}  # down\n")
    second = run_cli("capture", "--hosts", f"@{hosts}", "-d", "1", "--attempts", "1", "-o", str(tmp_path / "second"),
                     timeout=120)
    only_busy = run_cli("capture", "-p", str(live_worker.port), "-d", "1", "-o", str(tmp_path / "third"), timeout=120)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert "--host is deprecated here; use --hosts" in err
    assert second.returncode == 2 and "Traceback" not in second.stderr
    line = second.stderr.strip().splitlines()[-1]
    assert f"localhost:{live_worker.port}: busy: another capture is running on that server" in line
    assert f"localhost:{dead}: no profiler server answered" in line and f"xlaprof.start_server({dead})" in line
    assert not (tmp_path / "second").exists()
    assert only_busy.returncode == 2 and only_busy.stderr.count("\n") == 1, only_busy.stderr
    assert "wait for it to finish, or capture another port" in only_busy.stderr
    assert "start_server" not in only_busy.stderr and not (tmp_path / "third").exists()
