"""The A/B truth harness of a read's cost: both arms in one process, host and device on separate cores.

Contract: ``add_options(parser)`` adds to a workload's parser:
- ``--pin-cores``: ``pin_if_asked(args)`` then calls ``pin_host_and_device()``, which (on a machine
  with at least two usable cores) starts the daemon thread ``pin-cores``, which every ``REPIN_S`` gives each thread of the process, by its
  native id, one core: the process's Python threads (the main thread, the stack sampler's emitters,
  ``threading`` threads) and torch's autograd engine threads (``pt_autograd_N``: they trace
  ``backward()`` and run its CPU fallbacks while the main thread waits) and the stack sampler's
  native thread (``xlaprof-trip``: it asks the main thread for its samples) are the host, on the first
  usable core; every other thread (the native pools of
  torch_xla and the XLA CPU client, which run the device's programs and transfers, created lazily
  at the first compile and execution, and the profiler's) the second. New threads inherit their
  creator's core, hence the repeats; a thread is pinned again only if its side changed (a Python
  thread seen before ``threading`` registered it).
- ``--alternate-reads``: ``with sampling_run(args, number) as reads:`` around each sampling run of
  the workload: even runs read (``reads`` is True), odd runs take the workload's counterfactual
  without the reads; each run is the span ``READS_ARM`` or ``NO_READS_ARM`` and ends with
  ``xm.wait_device_ops()`` inside it (not a read: no value comes back), so a run's span is its
  whole cost, device work included (a run without reads leaves none of it to the next run).
  Both arms run interleaved in one process, so a busy machine's changing load falls on both
  alike; a run during which other loads took more than ``FOREIGN_MAX_SHARE`` of a core from the
  pinned cores (``ForeignLoad``) ends with an empty ``DISTURBED`` span inside its own: it did not
  measure the workload alone. Without the option ``reads`` is True and nothing is added.
``thread_names()`` is {thread id: name} of this process's threads. ``thread_cores(pid)`` reads, from
outside, each thread's allowed cores, the core it last ran on and the CPU time it used (clock ticks).
``ForeignLoad()`` (after ``pin_host_and_device``) measures, over a stretch of time (``start()``, then
``share()``), the time the pinned cores gave to anything but this process (other processes, the kernel's
own threads, interrupts, the hypervisor's steal), as a share of one core's time: pinning keeps the
scheduler from moving the workload away from such a load, and a busy device core or host core moves an
A/B saving by tens of points. ``quiet(*shares)`` says whether blocks or runs with those shares count; an
A/B with fewer than ``MIN_QUIET_PAIRS`` quiet pairs counts every pair.

On the CPU device the "device" computes on the host's cores: an A/B saving in step time mixes a
read's cost with the host and the device contending for cores. Pinned, the host's Python and the
device's programs each have a core of their own (other processes may still share them).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time

from collectors.stack_sampler import TRIP_THREAD

REPIN_S = 0.2
AUTOGRAD_THREAD = "pt_autograd_"  # the name torch gives its autograd engine's device threads
# A run or block of an A/B measurement during which the pinned cores gave others more than this share
# of a core's time measured that load as much as the workload (a core taken whole by another process
# moved the CPU fallback's saving from about 50% of the idle time to 24% or 67%): it does not count.
FOREIGN_MAX_SHARE = 0.15
MIN_QUIET_PAIRS = 3  # fewer quiet pairs than this measure nothing: every pair counts then
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_pinned: tuple[int, int] | None = None  # (host core, device core) once pinned


READS_ARM, NO_READS_ARM = "with_reads", "without_reads"
DISTURBED = "disturbed"


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pin-cores", action="store_true",
                        help="host Python threads on one core, the CPU device's native threads on another")
    parser.add_argument("--alternate-reads", action="store_true",
                        help="even sampling runs read, odd runs do not; steps named after their arm")


@contextlib.contextmanager
def sampling_run(args: argparse.Namespace, number: int):
    if not args.alternate_reads:
        yield True
        return
    import torch_xla.core.xla_model as xm

    import xlaprof

    reads, load = number % 2 == 0, ForeignLoad()
    load.start()
    with xlaprof.trace(READS_ARM if reads else NO_READS_ARM):
        yield reads
        xm.wait_device_ops()
        if not quiet(load.share()):
            with xlaprof.trace(DISTURBED):
                pass


def pin_if_asked(args: argparse.Namespace) -> None:
    if args.pin_cores:
        pin_host_and_device()


def pin_host_and_device() -> None:
    global _pinned
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= 2:
        _pinned = cores[0], cores[1]
        threading.Thread(target=_keep_pinned, args=(cores[0], cores[1]), daemon=True, name="pin-cores").start()


def _keep_pinned(host_core: int, device_core: int) -> None:
    core_of: dict[int, int] = {}
    while True:
        python = {t.native_id for t in threading.enumerate()}
        names = thread_names()
        host = python | _autograd_engine_threads(names) | {tid for tid, name in names.items() if name == TRIP_THREAD}
        for tid in names:
            core = host_core if tid in host else device_core
            if core_of.get(tid) != core:  # new, or a Python thread seen before it registered
                try:
                    os.sched_setaffinity(tid, {core})
                except OSError:  # the thread ended meanwhile
                    continue
                core_of[tid] = core
        time.sleep(REPIN_S)


def thread_names() -> dict[int, str]:
    """{thread id: its name} of this process's threads (one that ends meanwhile is left out)."""
    names = {}
    for tid in map(int, os.listdir("/proc/self/task")):
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                names[tid] = comm.read().strip()
        except OSError:  # the thread ended meanwhile
            continue
    return names


def _autograd_engine_threads(names: dict[int, str]) -> set[int]:
    """The threads (of ``names``) that are torch's autograd engine threads: host work (they trace
    ``backward()`` while the main thread waits), which on the device's core ran beside the device's
    programs in an arm without reads, where the two run at once. Each is the oldest thread of its name
    (``pt_autograd_<device>``): a thread that an engine thread starts takes its name (Linux), as the
    device runtime's threads do when the first ``backward()`` of the process starts them."""
    oldest: dict[str, tuple[int, int]] = {}
    for tid, name in names.items():
        if not name.startswith(AUTOGRAD_THREAD):
            continue
        try:
            started = int(stat_fields(f"/proc/self/task/{tid}/stat")[19])
        except OSError:  # the thread ended meanwhile
            continue
        if (started, tid) < oldest.get(name, (started + 1, tid)):
            oldest[name] = started, tid
    return {tid for _, tid in oldest.values()}


def stat_fields(path: str) -> list[str]:
    """A /proc stat file's fields from the third (state) on: ``[19]`` is the start time, ``[11]`` and
    ``[12]`` the user and system ticks (the second field, the name in brackets, may hold spaces)."""
    with open(path) as stat:
        return stat.read().rsplit(")", 1)[1].split()


def thread_cores(pid: int) -> dict[int, tuple[str, int, int]]:
    """{thread id: (its allowed cores as /proc lists them, e.g. "1"; the core it last ran on; its CPU ticks)}."""
    cores = {}
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as status:
                allowed = next(line.split(":")[1].strip() for line in status if line.startswith("Cpus_allowed_list"))
            fields = stat_fields(f"/proc/{pid}/task/{tid}/stat")
        except (OSError, StopIteration):
            continue
        cores[tid] = allowed, int(fields[36]), int(fields[11]) + int(fields[12])
    return cores


def quiet(*shares: float) -> bool:
    """Whether blocks or runs with these ``ForeignLoad`` shares measured the workload alone."""
    return max(shares) <= FOREIGN_MAX_SHARE


def _busy_ticks(cores: tuple[int, ...]) -> int:
    """The cores' busy clock ticks so far (/proc/stat: user, nice, system, irq, softirq, steal)."""
    busy = 0
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
                user, nice, system, _, _, irq, softirq, steal = map(int, fields[:8])
                busy += user + nice + system + irq + softirq + steal
    return busy


def _own_ticks() -> int:
    """The clock ticks this process's threads used so far, ended ones included (/proc/self/stat)."""
    fields = stat_fields("/proc/self/stat")
    return int(fields[11]) + int(fields[12])


class ForeignLoad:
    """How much of the pinned cores' time went to anything but this process (see the module's contract)."""

    def __init__(self) -> None:
        self._cores = _pinned or ()

    def start(self) -> None:
        self._began, self._busy, self._own = time.monotonic(), _busy_ticks(self._cores), _own_ticks()

    def share(self) -> float:
        """Since ``start()``: the time others took on the pinned cores, as a share of one core's (0.0 unpinned)."""
        if not self._cores:
            return 0.0
        elapsed = (time.monotonic() - self._began) * _CLOCK_TICKS
        return max(0, (_busy_ticks(self._cores) - self._busy) - (_own_ticks() - self._own)) / elapsed
