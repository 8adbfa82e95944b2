"""``xlaprof demo``, the README's main job: a real worker on the CPU device, captured, analysed,
reported, then the dashboard served on the session until Ctrl-C."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from collectors.server import free_port
from tests.support.workers import REPO
from xlaprof.session.layout import DEBUG_FILE_SUFFIX

pytestmark = pytest.mark.torch_xla


def test_demo_reports_the_culprits_and_serves_the_dashboard(tmp_path):
    port = free_port()
    scratch = tmp_path / "tmp"  # the demo's temporary folder
    scratch.mkdir()
    demo = subprocess.Popen([sys.executable, "-m", "xlaprof", "demo", "--duration", "4", "--logdir",
                             str(tmp_path / "logs"), "--dashboard-port", str(port)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(scratch)})
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            line = demo.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "xlaprof dashboard: serving" in line:
                break
        report = "".join(lines)
        assert f"http://127.0.0.1:{port}/" in report, report + demo.stderr.read() if demo.poll() is not None else report
        session = next(line.split("session: ", 1)[1].strip() for line in lines if line.startswith("session: "))
        assert os.path.isfile(os.path.join(session, "xlaprof.json"))
        # torch_xla's debug file (compile causes) is kept in the session; the worker's own went with it
        assert any(name.endswith(DEBUG_FILE_SUFFIX) for _, _, names in os.walk(session) for name in names)
        assert not [path.name for path in scratch.iterdir() if path.name.startswith("xlaprof-demo-")]
        assert "[recompilation]" in report and "train_step" in report and "log_loss" in report
        assert _answers(f"http://127.0.0.1:{port}/")
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(timeout=30)
        except subprocess.TimeoutExpired:
            demo.kill()
    everything = "".join(lines) + demo.stdout.read() + demo.stderr.read()
    # Ctrl-C ends the dashboard, as it ends every command: "interrupted", exit 130 (the README's demo ends so).
    assert demo.returncode == 130 and "xlaprof: interrupted" in everything, everything[-2000:]
    # The URL to open, once: the session's page; no framework banner beside it.
    assert everything.count(f"http://127.0.0.1:{port}/") == 1, everything[-2000:]
    assert f"http://127.0.0.1:{port}/session/{os.path.basename(session)} " in everything
    assert "Dash is running" not in everything and "Serving Flask app" not in everything


def _answers(url: str, within_s: float = 60.0) -> bool:
    """The server prints its URL just before it binds: poll until it answers."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as page:
                return page.status == 200
        except OSError:
            time.sleep(0.3)
    return False
