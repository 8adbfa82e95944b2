"""Shared fixtures: real workers on the CPU XLA device, and real captures of them.

- ``demo_worker``: the demo workload (an ``.item()`` every step, a new shape every step), started
  once for the test session and paused except while it is used; ``live_worker``: that worker running,
  with its profiler server up, for the test that asks for it.
- ``real_logdir``: a logdir holding one session captured from it by the real CLI; and
  ``real_capture_path``, that session's ``.xplane.pb``.
- ``workload_sessions``: sessions of variants that differ in one thing (fixed shapes; no reads),
  for the tests that must tell them apart.
"""
from __future__ import annotations

import glob
import os

import pytest

from tests.support.workers import DemoWorker, run_cli
from tests.support.workloads.recompile_worker import FAST_COMPILE_ENV

CAPTURE_SECONDS = "3"


def _capture(port: int, logdir: str, name: str) -> str:
    result = run_cli("capture", "--port", str(port), "--duration", CAPTURE_SECONDS, "--logdir", logdir,
                     "--name", name)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def capture_worker(logdir: str, name: str, *args: str, module: str, debug_file: str | None = None,
                   env: dict | None = None) -> str:
    """Start a workload (``env``: variables of its own), capture it with the real CLI as session
    ``name``, stop it; the session dir."""
    worker = DemoWorker(*args, debug_file=debug_file, module=module, env=env)
    try:
        return _capture(worker.port, logdir, name)
    finally:
        worker.stop()


def capture_arms(logdir: str, arms: dict[str, list[str]], module: str,
                 env: dict | None = None) -> dict[str, tuple[str, object]]:
    """``capture_worker`` for each arm (name -> the workload's arguments): its session dir and analysis."""
    from xlaprof.analysis import analyze
    from xlaprof.session import Session

    captured = {}
    for arm, args in arms.items():
        session = capture_worker(logdir, arm, *args, module=module, env=env)
        captured[arm] = session, analyze(Session.load(session))
    return captured


@pytest.fixture(scope="session")
def demo_worker(tmp_path_factory):
    # A new shape every step and a small model (short steps, quick compiles, even on a busy machine):
    # every capture of it holds several compiles of train_step and whole steps. No time limit
    # (worker.stop() ends it): the default --seconds 600 counts the time it is paused too, and a full
    # run lasts about 14 min: it ended on its own, before the last of its users. It compiles without
    # LLVM's optimizations (the same graphs, each compile about half as long): it compiles at every step,
    # and on a loaded machine a 3 s capture held one whole compile of train_step, with no recompile to explain.
    worker = DemoWorker("--reshape-every", "1", "--width", "64", "--batch", "8", "--seconds", "inf",
                        debug_file=str(tmp_path_factory.mktemp("debug") / "pt_xla_debug.txt"), env=FAST_COMPILE_ENV)
    worker.pause()  # it keeps a core busy: it runs only for its users (``live_worker``, ``real_logdir``)
    yield worker
    worker.stop()


@pytest.fixture
def live_worker(demo_worker, real_logdir):
    # real_logdir first: its capture must see the worker's first sequence lengths compile, which a test
    # running the worker before it (a capture from the dashboard's form) would have used up.
    with demo_worker.resumed():
        yield demo_worker


@pytest.fixture(scope="session")
def real_logdir(demo_worker, tmp_path_factory) -> str:
    logdir = str(tmp_path_factory.mktemp("real_logdir"))
    with demo_worker.resumed():
        _capture(demo_worker.port, logdir, "demo")
    return logdir


@pytest.fixture(scope="session")
def real_capture_path(real_logdir) -> str:
    (path,) = glob.glob(os.path.join(real_logdir, "plugins", "profile", "*", "*.xplane.pb"))
    return path


@pytest.fixture(scope="session")
def workload_sessions(tmp_path_factory, real_logdir) -> dict[str, str]:
    """{variant: session dir}: 'changing_shapes' (the demo), 'fixed_shapes', 'no_reads', and
    'fallback' (fixed shapes, no reads, a CPU-fallback op every step)."""
    logdir = str(tmp_path_factory.mktemp("variants"))
    sessions = {"changing_shapes": glob.glob(os.path.join(real_logdir, "plugins", "profile", "*"))[0]}
    debug = tmp_path_factory.mktemp("variant_debug")
    variants = (("fixed_shapes", ["--fixed-shapes"]), ("no_reads", ["--fixed-shapes", "--read-every", "0"]),
                ("fallback", ["--fixed-shapes", "--read-every", "0", "--fallback-every", "1"]))
    for variant, args in variants:
        worker = DemoWorker(*args, debug_file=str(debug / f"{variant}.txt"))
        try:
            sessions[variant] = _capture(worker.port, logdir, variant)
        finally:
            worker.stop()
    return sessions
