"""``xlaprof capture`` and ``xlaprof analyze`` as a person runs them: real CLI in a subprocess,
against a real torch_xla worker on the CPU device."""
from __future__ import annotations

import json
import os
import re

import pytest

from collectors.server import free_port
from tests.support.workers import REPO, run_cli
from xlaprof.session import Session, list_sessions

pytestmark = pytest.mark.torch_xla

CONTRACT_KEYS = {"session", "workers", "window_us", "device_busy_us", "device_idle_us", "idle_by_cause_us",
                 "compiles", "transfers_from_device", "gaps", "findings"}
CAUSES = {"transfer_from_device", "compile", "host_tracing", "host_blocked", "transfer_to_device", "unattributed"}


def _tree(path: str) -> dict[str, tuple[int, float]]:
    found = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            found[full] = (os.path.getsize(full), os.path.getmtime(full))
    return found


def test_capture_writes_a_tensorboard_layout_session_with_manifest(real_logdir):
    (summary,) = list_sessions(real_logdir)
    assert summary.run == "demo"
    files = sorted(os.listdir(summary.path))
    worker_file = next(f for f in files if f.endswith(".xplane.pb"))
    assert worker_file.startswith("localhost_") and "xlaprof.json" in files
    manifest = summary.manifest
    (worker,) = manifest["workers"]
    assert manifest["status"] == "complete" and worker["status"] == "ok" and worker["error"] is None
    assert worker["file"] == worker_file and worker["events"] > 1000
    assert manifest["versions"]["xlaprof"] and manifest["versions"]["xprof"]
    delta = worker["metrics"]["delta"]
    # the window's metrics: the demo reads the loss every step and compiles a new shape every step
    assert delta["TransferFromDeviceTime.count"] >= 1 and delta["CompileTime.count"] >= 1
    assert worker["metrics"]["facts"]["torch_xla_version"].startswith("2.9")
    # the worker's PT_XLA_DEBUG_FILE came along, joined to the compiles by graph hash
    assert worker_file.replace(".xplane.pb", ".pt_xla_debug.txt") in files


def test_analyze_json_contract_on_a_real_capture(real_logdir):
    result = run_cli("analyze", real_logdir, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert CONTRACT_KEYS <= report.keys()
    assert set(report["idle_by_cause_us"]) == CAUSES
    assert sum(report["idle_by_cause_us"].values()) == pytest.approx(report["device_idle_us"], rel=1e-9)
    (worker,) = report["workers"]
    assert worker["devices"] == ["CPU:0"] and worker["busy_us"] > 0
    assert worker["busy_us"] + worker["idle_us"] == pytest.approx(report["window_us"], rel=1e-6)
    for gap in report["gaps"]:
        assert {"worker", "device", "start_us", "dur_us", "cause", "span", "source"} <= gap.keys()
        assert gap["cause"] in CAUSES
    cost = [f["lost_us"] + f["busy_added_us"] for f in report["findings"]]  # ranked by cost (contract 2.1)
    assert cost == sorted(cost, reverse=True)
    for finding in report["findings"]:
        assert {"kind", "lost_us", "span", "source", "advice"} <= finding.keys()
    # compiles carry torch_xla's own cause from the debug file, and executions their user line
    assert any(c["cause"] for c in report["compile_events"])
    assert any(e["cause"] == "user torch_xla.sync" and "demo_worker.py:" in e["frame"]
               for e in report["execution_causes"])


def test_analyze_text_report_leads_with_findings(real_logdir):
    result = run_cli("analyze", real_logdir)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.index("Findings") < text.index("Largest idle gaps")
    assert "log_loss" in text and "demo_worker.py" in text


def test_second_capture_with_the_same_name_never_overwrites(live_worker, tmp_path):
    logdir = str(tmp_path)
    paths = []
    for _ in range(2):
        result = run_cli("capture", "--port", str(live_worker.port), "--duration", "1", "--logdir", logdir,
                         "--name", "again")
        assert result.returncode == 0, result.stderr
        paths.append(result.stdout.strip().splitlines()[-1])
    assert paths[0] != paths[1] and os.path.basename(paths[1]) == "again-2"
    assert all(os.path.isfile(os.path.join(p, "xlaprof.json")) for p in paths)


def test_unreachable_worker_exits_2_with_one_line_and_touches_nothing(tmp_path):
    logdir = tmp_path / "logs"
    (logdir / "plugins" / "profile" / "earlier").mkdir(parents=True)
    keep = logdir / "plugins" / "profile" / "earlier" / "localhost_1.xplane.pb"
    keep.write_bytes(b"an earlier capture")
    before = _tree(str(logdir))
    port = free_port()
    result = run_cli("capture", "--port", str(port), "--duration", "1", "--logdir", str(logdir), timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"localhost:{port}" in lines[0] and "xlaprof.start_server" in lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert _tree(str(logdir)) == before  # nothing written, nothing removed, no staging left behind
    assert os.listdir(logdir / "plugins" / "profile") == ["earlier"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.2"])  # a local worker, and one the client treats as remote
def test_a_capture_that_gets_nothing_creates_nothing(tmp_path, host):
    logdir = tmp_path / "new-logdir"
    port = free_port()
    result = run_cli("capture", "--host", f"{host}:{port}", "--duration", "1", "--attempts", "1",
                     "--logdir", str(logdir), timeout=120)
    assert result.returncode == 2 and "nothing captured" in result.stderr, result.stderr
    assert not logdir.exists() and os.listdir(tmp_path) == []  # not even plugins/profile


def test_partial_capture_keeps_the_live_worker_and_marks_the_dead_one(live_worker, tmp_path):
    dead = free_port()
    result = run_cli("capture", "--host", f"localhost:{live_worker.port},localhost:{dead}", "--duration", "1",
                     "--logdir", str(tmp_path))
    assert result.returncode == 3, result.stderr
    assert f"localhost:{dead}" in result.stderr
    session = Session.load(result.stdout.strip().splitlines()[-1])
    assert session.manifest["status"] == "partial"
    status = {w["address"]: w for w in session.manifest["workers"]}
    assert status[f"localhost:{live_worker.port}"]["status"] == "ok"
    assert status[f"localhost:{dead}"]["status"] == "failed" and status[f"localhost:{dead}"]["error"]
    assert [w.port for w in session.workers] == [live_worker.port]


@pytest.mark.parametrize("args, message", [
    (["analyze", "/no/such/dir"], "no such file or directory"),
    (["analyze", REPO], "no profile sessions here"),
    (["capture", "--hosts", "localhost:notaport"], "the port must be a number"),
    (["capture", "--duration", "0"], "-d/--duration: '0': expected a finite number of seconds above 0"),
])
def test_bad_input_gets_one_clear_line_and_exit_2(args, message):
    result = run_cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


def test_a_busy_dashboard_port_is_one_line_and_exit_2_before_any_work(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for args in (["dashboard", "--logdir", str(tmp_path), "--port", str(port)],
                     ["demo", "--logdir", str(tmp_path), "--dashboard-port", str(port)]):
            result = run_cli(*args, timeout=60)
            assert result.returncode == 2, result.stderr
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0]
    assert os.listdir(tmp_path) == []  # the demo stopped before starting a worker or a capture


def test_every_command_documents_itself_and_every_option_its_default():
    wide = dict(os.environ, COLUMNS="300")  # no wrapped help lines
    for command in ("capture", "analyze", "dashboard", "demo"):
        result = run_cli(command, "--help", env=wide)
        assert result.returncode == 0 and "usage: xlaprof " + command in result.stdout
        # One block per option: its flags, then its help (on the next line when the flags are long).
        options = re.split(r"\n  (?=-)", result.stdout.split("options:", 1)[1])[1:]
        assert len(options) > 2 and all("default" in o for o in options if not o.startswith("-h,")), result.stdout
    attempts = next(line for line in run_cli("capture", "--help", env=wide).stdout.splitlines()
                    if line.strip().startswith("--attempts"))
    assert "(default: 3)" in attempts
