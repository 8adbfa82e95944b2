"""The worker side of ``xlaprof demo``: run the demo workload on the CPU XLA device and capture it.

Contract: ``capture_demo(logdir, duration_s, port)`` starts ``collectors.demo_worker`` in a
subprocess (with ``PJRT_DEVICE=CPU`` and ``PT_XLA_DEBUG_LEVEL=2`` so compile causes are
recorded), waits for it to be ready, captures it with the real capture client, stops it, and
returns the session directory. The CLI's ``demo`` command then analyses it and serves the
dashboard (collectors never import the analyses or the dashboard).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time

from collectors.capture import WorkerAddress, capture_session
from collectors.server import free_port
from xlaprof.errors import XlaprofError

READY_TIMEOUT_S = 300.0  # importing torch_xla and the first compiles take 10-60 s on a busy 2-core machine


def _say(message: str) -> None:
    print(f"[demo] {message}", file=sys.stderr, flush=True)


def start_worker(port: int, debug_file: str | None, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None, module: str = "collectors.demo_worker") -> subprocess.Popen:
    """Start ``python -m module --port P --watch-stdin ...`` on the CPU device; with a
    ``debug_file``, torch_xla's debug output (compile causes) goes there."""
    debug = {"PT_XLA_DEBUG_LEVEL": "2", "PT_XLA_DEBUG_FILE": debug_file} if debug_file else {}
    env = dict(os.environ, PJRT_DEVICE="CPU", **debug, **(env or {}))
    return subprocess.Popen(
        [sys.executable, "-m", module, "--port", str(port), "--watch-stdin", *(extra_args or [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)


def wait_ready(worker: subprocess.Popen, timeout_s: float = READY_TIMEOUT_S) -> int:
    """Wait for the worker's ``ready <port>`` line; returns the port it serves."""
    ready = threading.Event()
    served: list[int] = []

    def watch() -> None:
        for line in worker.stdout:
            if line.startswith("ready"):
                served.append(int(line.split()[1]))
                ready.set()
                return

    threading.Thread(target=watch, daemon=True).start()
    started = time.monotonic()
    while not ready.wait(1.0):
        if worker.poll() is not None:
            raise XlaprofError(f"the demo worker exited early (code {worker.returncode}); "
                               f"is torch_xla installed? run ./run.sh setup")
        if time.monotonic() - started > timeout_s:
            raise XlaprofError(f"the demo worker was not ready within {timeout_s:.0f} s")
    return served[0]


def stop_worker(worker: subprocess.Popen) -> None:
    if worker.poll() is None:
        worker.stdin.close()  # the worker exits when its stdin closes
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def capture_demo(*, logdir: str, duration_s: float, port: int = 0) -> str:
    """Start the demo worker, capture it as ``xlaprof capture`` would, stop it; the session path."""
    port = port or free_port()
    # The capture keeps a copy of torch_xla's debug file in the session: the original goes with the worker.
    with tempfile.TemporaryDirectory(prefix="xlaprof-demo-") as debug_dir:
        _say(f"starting a training loop on the CPU XLA device, profiler port {port} "
             f"(importing torch_xla takes a while)...")
        worker = start_worker(port, os.path.join(debug_dir, "pt_xla_debug.txt"))
        try:
            wait_ready(worker)
            _say(f"worker ready; capturing {duration_s:g} s, as `xlaprof capture --port {port}` would")
            return capture_session([WorkerAddress("localhost", port)], duration_s=duration_s, logdir=logdir,
                                   name="demo").path
        finally:
            stop_worker(worker)
