"""Real ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, started as a person starts them.

The scheduler picks its own port and writes its address to a scheduler file, so no other process
can take the port between choosing it and binding it; each process's output goes to a log beside
that file, which a start that fails shows."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
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


@contextlib.contextmanager
def dask_cluster(directory: Path, workers: dict[str, tuple[str, ...]]) -> Iterator[tuple[str, object, dict]]:
    """A scheduler and a worker per name (with its extra ``dask worker`` options), a ``Client`` once
    they have all joined: (address, client, processes by name, the scheduler's "scheduler"). Those
    still running after are ended, the workers first (SIGTERM: a nanny ends its worker; killed where
    that does not end them, as a stopped one)."""
    from distributed import Client

    scheduler, address = start_scheduler(directory)
    processes = {"scheduler": scheduler}
    try:
        for name, options in workers.items():
            processes[name] = start_worker(directory, address, name, *options)
        with Client(address, timeout=f"{START_S}s") as client:
            client.wait_for_workers(len(workers), timeout=START_S)
            yield address, client, processes
    finally:
        for process in reversed(processes.values()):
            if process.poll() is None:
                process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
