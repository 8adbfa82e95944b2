"""The corpus' pod: two worker processes on this machine with no spans (only ``xlaprof.start_server``), one
of them sleeping ``SLEEP_MS`` a step in its loader, captured at once by the real CLI.

Contract: ``capture_sleeping_pod(logdir, busy=False)`` starts both workers (``gpt2_worker``'s MLP, no
reads), lets them run ``WARM_S`` past the second one's "ready", captures both for ``DURATION_S`` with
``xlaprof capture``, stops them and returns ``PodCapture``: the session's path and the sleeping worker's
label (as the session names it). ``busy``: a process spinning on a CPU runs from before the workers
start to the capture's end (a loaded host: every worker's Python waits for a core). A failed capture
raises ``RuntimeError`` with the CLI's error. The truth is the workload's own: the sleeper is the one
straggler, a blocked host is why, the blocked finding is on the sleeper alone, at ``LOADER_LINE``;
``score_pod(report, sleeper)`` -> ``PodScore`` holds what the analysis said of each (``report``: the
JSON contract's dict).
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from collectors.server import free_port
from tests.support.cpu_spinner import spinning
from tests.support.workers import DemoWorker, run_cli, source_line
from tests.support.workloads import gpt2_worker
from xlaprof.session import Session

SLEEP_MS = 30
# "ready" comes after 3 steps: both run on before the capture, as the first one did while the second
# started. (The compiles of 1.1-1.4 s seen in the window now and then were, most likely, the stack sampler's doing:
# a frame it held kept a function's tensors alive into a sync. It holds none now.)
WARM_S = 3.0  # about 60 steps of the sleeping worker
DURATION_S = 3
LOADER_LINE = f"{gpt2_worker.__file__}:{source_line(gpt2_worker, '# LOADER')}"


@dataclass(frozen=True)
class PodCapture:
    session: str  # the session's path
    sleeper: str  # the sleeping worker's label (host:port)


@dataclass(frozen=True)
class PodScore:
    stragglers: list[str]  # the workers the analysis names stragglers
    excess_cause: str | None  # why the first straggler is slower
    main_cause: str | None  # what dominates its steps
    blocked_workers: list[str] | None  # the workers of the blocked finding at LOADER_LINE (None: no such finding)

    def right(self, sleeper: str) -> bool:
        return (self.stragglers == [sleeper] and self.excess_cause == "host_blocked"
                and self.blocked_workers == [sleeper])


def score_pod(report: dict, sleeper: str) -> PodScore:
    stragglers = report["stragglers"]
    blocked = [f["workers"] for f in report["findings"] if f["kind"] == "host_blocked" and f["source"] == LOADER_LINE]
    return PodScore([s["worker"] for s in stragglers], stragglers[0]["excess_cause"] if stragglers else None,
                    stragglers[0]["main_cause"] if stragglers else None, blocked[0] if blocked else None)


def capture_sleeping_pod(logdir: str, busy: bool = False) -> PodCapture:
    base = free_port(consecutive=2)
    workers = []
    with spinning() if busy else contextlib.nullcontext():
        try:
            for rank, sleep_ms in ((0, 0), (1, SLEEP_MS)):
                env = {"PJRT_LOCAL_PROCESS_RANK": str(rank), "PJRT_LOCAL_PROCESS_COUNT": "2"}
                workers.append(DemoWorker("--model", "mlp", "--no-reads", "--loader-sleep-ms", str(sleep_ms),
                                          debug_file=None, port=base, env=env,
                                          module="tests.support.workloads.gpt2_worker"))
            time.sleep(WARM_S)
            result = run_cli("capture", "--host", ",".join(f"localhost:{w.port}" for w in workers),
                             "--duration", str(DURATION_S), "--logdir", logdir)
        finally:
            for w in workers:
                w.stop()
    if result.returncode != 0:
        raise RuntimeError(f"the pod's capture failed: {result.stderr.strip()}")
    path = result.stdout.strip().splitlines()[-1]
    return PodCapture(path, next(w.label for w in Session.load(path).workers if w.port == workers[1].port))
