"""Drive the real dashboard: a server subprocess and headless Debian Chromium through Selenium.

Contract (shared by ``tests/test_dashboard_browser.py`` and ``bench/bench_dashboard.py``):
- ``DashboardServer(logdir)`` is a context manager running ``python -m xlaprof dashboard --logdir
  D --port P`` on a free port, exactly as a user would, until it answers; ``url`` is its root.
  ``repo=`` runs another checkout's code (a benchmark's baseline) instead of this one's.
  It is stopped by its own pid on exit; its output is in ``log_path``.
- ``chromium(profile_dir)`` starts headless ``/usr/bin/chromium`` through ``/usr/bin/chromedriver``
  (nothing is downloaded) with a fresh profile and the browser console log enabled;
  ``severe_console_errors(driver)`` returns the SEVERE console entries since the last call.
- ``ARTIFACTS`` is where screenshots go (``test-artifacts/``, gitignored).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from collectors.server import free_port

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000")
DEMO_SCRIPT = "/home/user/projects/resnet50/training/scripts/train.py"  # the demo logdir's training script
START_TIMEOUT_S = 90.0  # a busy 2-core machine imports dash and plotly slowly
WAIT_S = 60  # a browser test waits this long for something to appear


def browser_available() -> bool:
    return os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


class DashboardServer:
    def __init__(self, logdir: str | Path, log_dir: str | Path | None = None, verbose: bool = False,
                 repo: str | Path = REPO) -> None:
        self.logdir = str(logdir)
        self.repo = Path(repo)
        self.verbose = verbose  # log each session read ("reading session <dir>")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log_dir or self.logdir) / f"dashboard-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> DashboardServer:
        log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "xlaprof", *(["-v"] if self.verbose else []), "dashboard", "--logdir",
             self.logdir, "--port", str(self.port)],
            cwd=self.repo, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(self.repo)} if self.repo != REPO else None)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the dashboard exited with {self.process.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.__exit__(None, None, None)
        raise RuntimeError(f"the dashboard did not answer within {START_TIMEOUT_S} s:\n{self.output()}")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def chromium(profile_dir: str | Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile_dir}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def wait_for(driver, script: str, timeout: float = WAIT_S):
    """Wait until the JavaScript expression ``script`` is truthy; return its value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(f"return {script}"))


def severe_console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    # The whole page, not only the first screenful: grow the window to the document's height.
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(int(height), 800), 6000))
    driver.save_screenshot(str(path))
    return path


def write_demo_logdir(logdir: str | Path, *, steps: int = 40) -> dict[str, str]:
    """A logdir with a one-worker training run (a blocking read in ``log_loss`` every step, a
    recompile every 10 steps, spans in ``DEMO_SCRIPT``, a long path), the same with the stack
    sampler's Python stacks (``sampled``, two devices), a two-worker run, a run of a warm loop that
    compiles nothing, a run whose capture is random bytes and one whose manifest is not JSON.
    Returns {kind: run name}."""
    from tests.support.synthetic import training_capture, write_session

    write_session(str(logdir), "train", {"localhost_9012": training_capture(
        steps=steps, devices=4, read_every=1, recompile_every=10, script=DEMO_SCRIPT)})
    write_session(str(logdir), "sampled", {"localhost_9012": training_capture(
        steps=steps, devices=2, read_every=1, recompile_every=10, script=DEMO_SCRIPT, sampled=True)})
    write_session(str(logdir), "multi", {
        "host-a_9012": training_capture(steps=steps, devices=2, read_every=4, seed=1),
        "host-b_9012": training_capture(steps=steps, devices=2, read_every=8, seed=2)})
    write_session(str(logdir), "warm", {"localhost_9012": training_capture(steps=8, devices=1, warm=True)})
    write_session(str(logdir), "broken", {"localhost_9012": os.urandom(256)})
    bad_manifest = write_session(str(logdir), "badmanifest", {"localhost_9012": training_capture(steps=4)})
    Path(bad_manifest, "xlaprof.json").write_text("{not json")
    return {"train": "train", "sampled": "sampled", "multi": "multi", "warm": "warm", "broken": "broken",
            "badmanifest": "badmanifest"}
