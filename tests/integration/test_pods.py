"""Pods: several real worker processes captured at once into one session, compared; and
logdirs given as fsspec URLs."""
from __future__ import annotations

import glob
import json
import os
import shutil

import fsspec
import pytest

from collectors.server import free_port
from tests.support.workers import DemoWorker, run_cli
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.session import Session, list_sessions

pytestmark = pytest.mark.torch_xla


@pytest.fixture(scope="module")
def two_process_session(tmp_path_factory):
    """Two worker processes on this machine, as a launcher starts them (local rank 0 and 1 of 2),
    both calling start_server with the same base port; the second retraces a new shape each step."""
    base = free_port(consecutive=2)
    debug = tmp_path_factory.mktemp("pod_debug")
    workers = []
    try:
        for rank, args in ((0, ["--fixed-shapes"]), (1, ["--reshape-every", "1"])):  # 1 recompiles every step
            env = {"PJRT_LOCAL_PROCESS_RANK": str(rank), "PJRT_LOCAL_PROCESS_COUNT": "2"}
            workers.append(DemoWorker(*args, debug_file=str(debug / f"{rank}.txt"), port=base, env=env))
        logdir = str(tmp_path_factory.mktemp("pod"))
        hosts = ",".join(f"localhost:{w.port}" for w in workers)
        result = run_cli("capture", "--host", hosts, "--duration", "3", "--logdir", logdir)
    finally:
        for w in workers:
            w.stop()
    assert result.returncode == 0, result.stderr
    return base, [w.port for w in workers], result.stdout.strip().splitlines()[-1]


def test_each_local_process_serves_base_port_plus_its_rank(two_process_session):
    base, ports, _ = two_process_session
    assert ports == [base, base + 1]


def test_workers_are_captured_over_the_same_window_into_one_session(two_process_session):
    _, ports, path = two_process_session
    session = Session.load(path)
    assert sorted(w.port for w in session.workers) == ports
    assert all(w["status"] == "ok" for w in session.manifest["workers"])
    starts = [w.space.origin_ns for w in session.workers]
    assert max(starts) - min(starts) < 1e9  # concurrent: started within a second of each other
    windows = [w.space.window_us[1] for w in session.workers]
    assert all(2.5e6 < length < 3.6e6 for length in windows)


def test_the_recompiling_worker_is_the_straggler_and_compile_is_why(two_process_session):
    _, ports, path = two_process_session
    report = analysis_json(analyze(Session.load(path)))
    assert {w["host"] for w in report["workers"]} == {f"localhost:{p}" for p in ports}
    for worker in report["workers"]:
        assert sum(worker["idle_by_cause_us"].values()) == pytest.approx(worker["idle_us"], rel=1e-9)
    (straggler,) = report["stragglers"]
    assert straggler["worker"] == f"localhost:{ports[1]}"
    assert straggler["main_cause"] == straggler["excess_cause"] == "compile"
    assert set(report["per_worker"]) == {f"localhost:{p}" for p in ports}


def test_fsspec_logdirs_work_for_capture_analyze_and_listing(live_worker, tmp_path):
    url = f"file://{tmp_path}/remote-logs"
    captured = run_cli("capture", "--port", str(live_worker.port), "--duration", "1", "--logdir", url)
    assert captured.returncode == 0, captured.stderr
    run_dir = captured.stdout.strip().splitlines()[-1]
    assert run_dir.startswith("file://") and os.path.isfile(os.path.join(run_dir[len("file://"):], "xlaprof.json"))
    analyzed = run_cli("analyze", url, "--json")
    assert analyzed.returncode == 0, analyzed.stderr
    assert json.loads(analyzed.stdout)["session"] == run_dir


def test_a_session_in_an_in_memory_filesystem_loads_and_analyzes(real_logdir):
    fs = fsspec.filesystem("memory")
    (local_run,) = glob.glob(os.path.join(real_logdir, "plugins", "profile", "*"))
    target = "memory://pod-logs/plugins/profile/" + os.path.basename(local_run)
    for name in os.listdir(local_run):
        with open(os.path.join(local_run, name), "rb") as src, fs.open(f"{target}/{name}", "wb") as dst:
            shutil.copyfileobj(src, dst)
    (summary,) = list_sessions("memory://pod-logs")
    assert summary.run == os.path.basename(local_run)
    remote = analysis_json(analyze(Session.load("memory://pod-logs")))
    local = analysis_json(analyze(Session.load(local_run)))
    assert remote["idle_by_cause_us"] == local["idle_by_cause_us"]
