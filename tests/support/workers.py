"""Real torch_xla worker processes and real CLI runs, for the integration tests.

Contract: ``DemoWorker(*args)`` starts ``collectors.demo_worker`` (or ``module=``, e.g. a workload
of ``tests.support.workloads``) on the CPU XLA device on a free port (``.port``) and waits until it
is running; ``.stop()`` ends it. ``.pause()`` stops it where it is (SIGSTOP: it computes nothing,
its profiler server does not answer) and ``.resumed()`` is a block in which it runs again (SIGCONT),
paused again after it (it fails if the worker has exited): a worker kept for the whole test session
runs only while a test uses it, and leaves both cores to the others (a busy worker beside an A/B
measurement moved its ratio from 0.68-0.92 to 0.65-1.07). ``process_state(pid)`` is a process'
state letter. ``run_cli(*args)`` runs ``python -m xlaprof ...`` in a subprocess and returns the
CompletedProcess.
``SYNC_COUNTS`` is worker-script source defining ``counts()``: the (TransferFromDevice, MarkStep)
counts so far, for the tests that check instrumentation adds neither.
``source_line(module, text)`` is the number of a workload module's first line holding ``text``.
``wait_for_client(port)`` waits until a client holds a connection to a local server's ``port``
(from /proc/net/tcp*: e.g. a capture is talking to a worker's profiler server).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

from collectors.demo import start_worker, stop_worker, wait_ready
from collectors.server import free_port

SYNC_COUNTS = """
import torch_xla.debug.metrics as met

def counts():
    data = met.metric_data("TransferFromDeviceTime")
    return (data[0] if data else 0), met.counter_value("MarkStep") or 0
"""
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class DemoWorker:
    def __init__(self, *args: str, debug_file: str | None, port: int | None = None, env: dict | None = None,
                 module: str = "collectors.demo_worker") -> None:
        path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
        env = dict(env or {}, PYTHONPATH=path)  # the workloads of tests/ import from the repo
        self.process = start_worker(port or free_port(), debug_file, list(args), env, module)
        try:
            self.port = wait_ready(self.process)
        except BaseException:
            self.stop()
            raise

    def pause(self) -> None:
        self._signal(signal.SIGSTOP, stopped=True)

    @contextlib.contextmanager
    def resumed(self) -> Iterator[DemoWorker]:
        if self.process.poll() is not None:  # say so here, not as "no profiler server answered" later
            raise AssertionError(f"worker {self.process.pid} has exited (code {self.process.returncode})")
        self._signal(signal.SIGCONT, stopped=False)
        try:
            yield self
        finally:
            self.pause()

    def stop(self) -> None:
        self._signal(signal.SIGCONT, stopped=False)  # a paused worker could not read its stdin's end
        stop_worker(self.process)

    def _signal(self, signum: int, *, stopped: bool, timeout: float = 10.0) -> None:
        """Send ``signum`` and return once the process is (or is no longer) stopped."""
        if self.process.poll() is not None:
            return
        os.kill(self.process.pid, signum)
        deadline = time.monotonic() + timeout
        while (process_state(self.process.pid) == "T") != stopped:
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.process.pid} did not {'stop' if stopped else 'continue'}")
            time.sleep(0.005)


def process_state(pid: int) -> str:
    """A process' state letter from /proc (Linux): R running, S sleeping, T stopped, ..."""
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def run_cli(*args: str, timeout: float = 180, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xlaprof", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)


def run_python(code: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PJRT_DEVICE="CPU", **(env or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, env=environment)


def source_line(module, text: str) -> int:
    """The number of ``module``'s (or the source file's at that path) first line holding ``text``: the
    line a finding names."""
    with open(getattr(module, "__file__", module)) as handle:
        return next(i for i, line in enumerate(handle, 1) if text in line)


def wait_for_client(port: int, timeout: float = 60.0) -> None:
    """Return once a TCP connection to ``port`` on this machine is established (Linux), else fail."""
    wanted = f":{port:04X} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
            # columns: sl, local address, remote address, state (01: ESTABLISHED), ...
            if any(wanted in row.split()[1] + " " and row.split()[3] == "01" for row in rows):
                return
        time.sleep(0.05)
    raise AssertionError(f"no client connected to port {port} within {timeout} s")
