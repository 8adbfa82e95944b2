"""Dask fails cleanly: a real ``dask scheduler`` and real ``dask worker`` processes (no nanny, so a
killed worker stays dead), a worker killed while it holds an analysis task, bad and unreachable
scheduler addresses, ``--jobs`` beyond the cores, and Ctrl-C on a local cluster. Every failure is
one line and exit 2 within a bounded time; a task whose worker dies runs again on another."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import psutil
import pytest

from collectors.server import free_port
from tests.support.dask_processes import START_S as WAIT_S, dask_cluster
from tests.support.synthetic import training_capture, write_session
from tests.support.workers import REPO, run_cli
from xlaprof.dask_tasks import NO_WORKER_GRACE_S


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("pod"))
    captures = {f"tpu-vm-{i}_8466": training_capture(steps=30, devices=2, seed=i) for i in range(3)}
    return write_session(logdir, "pod", captures)


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two workers named A and B, each its own process; all stopped after."""
    with dask_cluster(tmp_path, {"A": ("--no-nanny",), "B": ("--no-nanny",)}) as running:
        yield running


def _worker_address(client, name: str) -> str:
    return next(a for a, w in client.scheduler_info()["workers"].items() if w["name"] == name)


def _kill_once_it_holds_a_task(client, process: subprocess.Popen, address: str) -> None:
    """Stop the worker, wait until the scheduler has given it a task of the analysis, then kill it:
    it dies holding the task, whatever the machine's speed."""
    process.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + WAIT_S
    while not client.processing().get(address):
        assert time.monotonic() < deadline, "the worker was never given a task"
        time.sleep(0.05)
    process.kill()


def _analyze(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "xlaprof", "analyze", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_killed_workers_task_runs_on_another_and_with_none_left_it_is_one_line(pod, cluster):
    address, client, processes = cluster
    here = json.loads(run_cli("analyze", pod, "--jobs", "1", "--json").stdout)
    a, b = _worker_address(client, "A"), _worker_address(client, "B")
    run = _analyze(pod, "--scheduler", address, "--json")
    _kill_once_it_holds_a_task(client, processes["A"], a)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert json.loads(out) == here  # the task A held ran again on B: the same analysis
    assert err.strip().splitlines() == [f"xlaprof: the Dask worker {a} left the Dask cluster at {address} while "
                                        f"analysing; its tasks were run again on the others"]
    # B killed as well: no worker is left to run its task, and the command says so, bounded in time.
    run = _analyze(pod, "--scheduler", address)
    _kill_once_it_holds_a_task(client, processes["B"], b)
    started = time.monotonic()
    out, err = run.communicate(timeout=120)
    assert time.monotonic() - started < NO_WORKER_GRACE_S + 15
    assert run.returncode == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"xlaprof: error: the Dask cluster at {address} has had no worker") and b in line, line


@pytest.mark.parametrize("address, says", [
    ("tcp://127.0.0.1", "it needs a port from 1 to 65535"), ("not-a-url", "it needs a port from 1 to 65535"),
    ("inproc://x", "the scheme must be tcp:// or tls://"), ("tcp://127.0.0.1:99999", "it needs a port from 1 to 65535"),
    ("tcp://127.0.0.1:0", "it needs a port from 1 to 65535"),
    ("tcp://h:8786/path", "it needs a host, and nothing after the port"),
])
def test_a_bad_scheduler_address_is_one_line_before_any_connection(pod, address, says):
    result = run_cli("analyze", pod, "--scheduler", address, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line == f"xlaprof: error: --scheduler: {address!r} is not a Dask scheduler address: expected " \
                   f"tcp://HOST:PORT ({says})"
    result = run_cli("analyze", pod, timeout=60, env=dict(os.environ, XLAPROF_DASK_SCHEDULER=address))
    assert result.returncode == 2 and result.stderr.startswith("xlaprof: error: XLAPROF_DASK_SCHEDULER: ")


def test_a_closed_port_and_a_silent_one_fail_within_the_connect_timeout(pod):
    started = time.monotonic()
    result = run_cli("analyze", pod, "--scheduler", f"tcp://127.0.0.1:{free_port()}", timeout=60)
    assert time.monotonic() - started < 10 and result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "cannot be reached (Connection refused)" in line
    silent = socket.socket()  # accepts connections and never says a word
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    held: list = []

    def hold_connections() -> None:  # until the socket, closed under it, fails its accept
        try:
            held.extend(silent.accept() for _ in range(8))
        except OSError:
            pass

    threading.Thread(target=hold_connections, daemon=True).start()
    try:
        started = time.monotonic()
        result = run_cli("analyze", pod, "--scheduler", f"tcp://127.0.0.1:{silent.getsockname()[1]}",
                         "--scheduler-timeout", "2", timeout=60)
        assert time.monotonic() - started < 2 + 10 and result.returncode == 2
        (line,) = result.stderr.strip().splitlines()
        assert "did not answer as one within 2 s" in line and "--scheduler-timeout" in line, line
    finally:
        silent.close()
    result = run_cli("analyze", pod, "--scheduler", "tcp://127.0.0.1:1", timeout=60,
                     env=dict(os.environ, XLAPROF_DASK_TIMEOUT="abc"))
    assert result.returncode == 2 and "XLAPROF_DASK_TIMEOUT" in result.stderr and "'abc'" in result.stderr


def test_jobs_beyond_the_cores_are_capped_with_a_note(pod):
    result = run_cli("analyze", pod, "--jobs", "1000", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    most = min(os.cpu_count() or 1, 3)
    assert result.stderr.strip().splitlines() == [
        f"xlaprof: note: --jobs 1000 capped at {most} processes ({os.cpu_count()} cores, 3 workers to analyse)"]
    assert json.loads(result.stdout) == json.loads(run_cli("analyze", pod, "--jobs", "1", "--json").stdout)


def test_ctrl_c_on_a_local_cluster_leaves_no_process_behind(pod):
    run = _analyze(pod, "--jobs", "2")
    me = psutil.Process(run.pid)
    deadline = time.monotonic() + WAIT_S
    while len(me.children(recursive=True)) < 3:  # the cluster's nannies and workers are starting
        assert time.monotonic() < deadline and run.poll() is None, "the local cluster never started"
        time.sleep(0.05)
    started = me.children(recursive=True)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130 and err.strip().splitlines()[-1] == "xlaprof: interrupted", err
    assert "Traceback" not in err and "leaked" not in err, err
    _, alive = psutil.wait_procs(started, timeout=10)
    assert not alive, [p.cmdline() for p in alive]


def test_the_dashboard_checks_its_scheduler_before_it_serves(tmp_path):
    result = run_cli("dashboard", "--logdir", str(tmp_path), "--port", str(free_port()), "--scheduler", "inproc://x",
                     timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "xlaprof: error: --scheduler: 'inproc://x' is not a Dask scheduler address: expected tcp://HOST:PORT "
        "(the scheme must be tcp:// or tls://)"]
