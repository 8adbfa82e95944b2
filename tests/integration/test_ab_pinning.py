"""ab_harness' pinning on a real torch_xla process: the host's threads on one core, the CPU device's on
the other. torch's autograd engine threads trace ``backward()`` (and run its CPU fallbacks) while the
main thread waits: they are the host, whatever their lack of Python. Measured in a child process,
since pinning moves every thread of the process."""
from __future__ import annotations

import json
import os

import pytest

from tests.support.workers import REPO, run_python
from tests.support.workloads.ab_harness import AUTOGRAD_THREAD

pytestmark = [pytest.mark.torch_xla, pytest.mark.exclusive,
              pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two cores")]

TRAIN_PINNED = """
import json, os, time
import torch, torch_xla
from tests.support.workloads import ab_harness
ab_harness.pin_host_and_device()
net = torch.nn.Linear(8, 8).to(torch_xla.device())
for _ in range(3):
    net(torch.randn(4, 8).to(torch_xla.device())).sum().backward()
    torch_xla.sync()
time.sleep(3 * ab_harness.REPIN_S)  # the pinning thread has seen every thread
threads = {}
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as comm:
        threads[tid] = comm.read().strip(), sorted(os.sched_getaffinity(int(tid)))
print(json.dumps({"main": str(os.getpid()), "threads": threads}))
"""


def test_the_autograd_engines_threads_run_on_the_hosts_core():
    done = run_python(TRAIN_PINNED, env={"PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr[-2000:]
    placed = json.loads(done.stdout.strip().splitlines()[-1])
    host, device = sorted(os.sched_getaffinity(0))[:2]
    threads = placed["threads"]
    assert threads[placed["main"]][1] == [host], threads
    autograd = [cores for name, cores in threads.values() if name.startswith(AUTOGRAD_THREAD)]
    assert autograd and all(cores == [host] for cores in autograd), threads
    assert any(cores == [device] for _, cores in threads.values()), threads  # the device's native pools
