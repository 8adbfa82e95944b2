"""Pods on Dask: the workers of a session analysed as tasks on a real ``dask scheduler`` and
``dask worker`` (processes on 127.0.0.1, torn down here) and on the embedded local cluster give
the JSON of the in-process analysis, byte for byte."""
from __future__ import annotations

import json
import os

import pytest

from tests.support.dask_processes import dask_cluster
from tests.support.synthetic import training_capture, write_session
from tests.support.workers import run_cli

TASK = "summarize_worker_task"


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    """Three workers on different hosts; the third recompiles every step (a straggler)."""
    logdir = str(tmp_path_factory.mktemp("pod"))
    captures = {f"tpu-vm-{i}_8466": training_capture(steps=40, devices=2, seed=i, recompile_every=1 if i == 2 else 0)
                for i in range(3)}
    return write_session(logdir, "pod", captures)


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """A real scheduler and one real worker process, as a person starts them; stopped after."""
    with dask_cluster(tmp_path_factory.mktemp("dask"), {"one": ()}) as (address, client, _):
        yield address, client


def tasks_run(client) -> int:
    """How many analysis tasks the cluster has finished so far."""
    def finished(dask_scheduler) -> int:
        prefix = dask_scheduler.task_prefixes.get(TASK)
        return prefix.state_counts["memory"] if prefix is not None else 0

    return client.run_on_scheduler(finished)


def analysed(*args: str, env: dict | None = None) -> dict:
    result = run_cli("analyze", *args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _clear_slowest(walls: dict[str, float]) -> bool:
    from xlaprof.analysis.pipeline.worker_comparison import TIE_SHARE

    slowest, second = sorted(walls.values())[-1], sorted(walls.values())[-2]
    return slowest - second > TIE_SHARE * slowest


def test_a_real_scheduler_and_worker_analyse_the_pod_as_this_process_does(pod, scheduler):
    address, client = scheduler
    here = analysed(pod, "--jobs", "1")
    assert [w["host"] for w in here["workers"]] == ["tpu-vm-0:8466", "tpu-vm-1:8466", "tpu-vm-2:8466"]
    assert [s["worker"] for s in here["stragglers"]] == ["tpu-vm-2:8466"]  # the pod comparison is in it
    assert next(iter(here["slowest_in_steps"])) == "tpu-vm-2:8466"
    text = run_cli("analyze", pod, "--jobs", "1").stdout
    rows = here["step_alignment"]  # each step's wall time per worker: who was slowest, counted here
    clear = [r for r in rows if _clear_slowest(r["wall_us"])]  # a step whose slowest tie has none
    share = sum(max(r["wall_us"], key=r["wall_us"].get) == "tpu-vm-2:8466" for r in clear) / len(clear)
    assert f"tpu-vm-2:8466 is the slowest worker in {share:.0%} of steps: compile" in text  # the pod first
    assert text.index("Pod of 3 workers") < text.index("Idle time by cause")
    assert analysed(pod, "--scheduler", address) == here
    assert tasks_run(client) == 3  # one task per worker ran on the cluster, not here
    # The address from the environment, for diff too.
    result = run_cli("diff", pod, pod, "--json", env=dict(os.environ, XLAPROF_DASK_SCHEDULER=address))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["after"]["workers"] == [w["host"] for w in here["workers"]]
    assert tasks_run(client) == 3 + 6


def test_the_embedded_local_cluster_gives_the_same_json(pod):
    assert analysed(pod, "--jobs", "2") == analysed(pod, "--jobs", "1")
