"""ab_harness' pinning on a real torch_xla process: the host's threads on one core, the CPU device's on
the other. torch's autograd engine threads trace ``backward()`` (and run its CPU fallbacks) while the
main thread waits: they are the host, whatever their lack of Python. A thread one of them starts takes
its name (Linux): the device runtime's threads, where the first ``backward()`` of the process starts
them (a CPU fallback's read), go with the device. The stack sampler's native thread, which asks the main
thread for its samples, is host work too. Measured in child processes, since pinning moves
every thread of the process."""
from __future__ import annotations

import json
import os

import pytest

from tests.support.workers import REPO, run_python
from collectors.stack_sampler import TRIP_THREAD
from tests.support.workloads.ab_harness import AUTOGRAD_THREAD

pytestmark = [pytest.mark.torch_xla, pytest.mark.exclusive,
              pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two cores")]

PLACED = """
time.sleep(3 * ab_harness.REPIN_S)  # the pinning thread has seen every thread
threads = {}
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as comm:
        started = int(ab_harness.stat_fields(f"/proc/self/task/{tid}/stat")[19])
        threads[tid] = comm.read().strip(), sorted(os.sched_getaffinity(int(tid))), started
print(json.dumps({"main": str(os.getpid()), "threads": threads}))
"""
TRAIN_PINNED = """
import json, os, time
import torch, torch_xla
from tests.support.workloads import ab_harness
ab_harness.pin_host_and_device()
net = torch.nn.Linear(8, 8).to(torch_xla.device())
for _ in range(3):
    net(torch.randn(4, 8).to(torch_xla.device())).sum().backward()
    torch_xla.sync()
""" + PLACED
SAMPLED_PINNED = """
import json, os, tempfile, time
import torch, torch_xla
import xlaprof
from tests.support.workloads import ab_harness
ab_harness.pin_host_and_device()
net = torch.nn.Linear(8, 8).to(torch_xla.device())
with tempfile.TemporaryDirectory() as logdir, xlaprof.profile(logdir, stack_hz=1000):
    for _ in range(3):
        net(torch.randn(4, 8).to(torch_xla.device())).sum().backward()
        torch_xla.sync()
""" + PLACED.replace("\n", "\n    ")
# Nothing read before the first backward(), whose CPU fallback (upsample_nearest2d_backward) reads.
FALLBACK_FIRST_PINNED = """
import json, os, time
import torch, torch_xla
from tests.support.workloads import ab_harness
ab_harness.pin_host_and_device()
device = torch_xla.device()
net = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.Upsample(scale_factor=2, mode="nearest"),
                          torch.nn.Conv2d(8, 4, 3, padding=1)).to(device)
for _ in range(3):
    net(torch.randn(2, 4, 16, 16).to(device)).sum().backward()
    torch_xla.sync()
""" + PLACED


def test_the_autograd_engines_threads_run_on_the_hosts_core():
    done = run_python(TRAIN_PINNED, env={"PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr[-2000:]
    placed = json.loads(done.stdout.strip().splitlines()[-1])
    host, device = sorted(os.sched_getaffinity(0))[:2]
    threads = placed["threads"]
    assert threads[placed["main"]][1] == [host], threads
    autograd = [cores for name, cores, _ in threads.values() if name.startswith(AUTOGRAD_THREAD)]
    assert autograd and all(cores == [host] for cores in autograd), threads
    assert any(cores == [device] for _, cores, _ in threads.values()), threads  # the device's native pools


def test_the_stack_samplers_own_thread_runs_on_the_hosts_core():
    done = run_python(SAMPLED_PINNED, env={"PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr[-2000:]
    threads = json.loads(done.stdout.strip().splitlines()[-1])["threads"]
    host, _ = sorted(os.sched_getaffinity(0))[:2]
    tripping = [cores for name, cores, _ in threads.values() if name == TRIP_THREAD]
    assert tripping == [[host]], threads


def test_threads_the_autograd_engine_starts_run_with_the_device():
    done = run_python(FALLBACK_FIRST_PINNED, env={"PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr[-2000:]
    threads = json.loads(done.stdout.strip().splitlines()[-1])["threads"]
    host, device = sorted(os.sched_getaffinity(0))[:2]
    named = sorted((started, int(tid), cores) for tid, (name, cores, started) in threads.items()
                   if name == f"{AUTOGRAD_THREAD}0")
    (_, _, engine_cores), started_by_it = named[0], named[1:]
    assert engine_cores == [host], threads
    assert started_by_it and all(cores == [device] for _, _, cores in started_by_it), threads
