"""Real ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, started as a person starts them.

The scheduler picks its own port and writes its address to a scheduler file, so no other process
can take the port between choosing it and binding it; each process's output goes to a log beside
that file, which a start that fails shows."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.workers import REPO

START_S = 60  # for a process to start on a loaded 2-core machine


def _dask() -> str:
    dask = shutil.which("dask", path=os.path.dirname(sys.executable))
    assert dask, "the dask command comes with dask.distributed"
    return dask


def _popen(args: list[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with open(log, "wb") as out:
        return subprocess.Popen([_dask(), *args], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)


def _log_tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


def start_scheduler(directory: Path) -> tuple[subprocess.Popen, str]:
    """A scheduler process and its address, once it listens; its log is ``directory/scheduler.log``."""
    file, log = directory / "scheduler.json", directory / "scheduler.log"
    process = _popen(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                      "--scheduler-file", str(file)], log)
    deadline = time.monotonic() + START_S
    while True:
        try:
            return process, json.loads(file.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the dask scheduler did not start (exit {process.poll()}):\n{_log_tail(log)}")
        time.sleep(0.1)


def start_worker(directory: Path, address: str, name: str, *options: str) -> subprocess.Popen:
    """A worker process joining ``address``; its log is ``directory/worker-<name>.log``."""
    return _popen(["worker", address, "--name", name, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1",
                   *options], directory / f"worker-{name}.log")
