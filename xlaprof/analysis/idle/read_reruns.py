"""Device time a read spends on work the device runs again: the partial graph it forced, rerun later.

Contract: ``read_reruns(programs, hlo, reads, devices)`` returns, per device (rows, in the worker's
device order) and per read of ``reads`` (``HostActivity.transfers_from_device``, columns, in its
order), the device time (microseconds) of the program runs that read forced whose work a later
program runs again. A read forced a run where the run was dispatched during the read's call (its
``ProgramExecutions.dispatch_us`` inside it: torch_xla dispatches from its own thread, so any
thread's). The work run again is the share of the forced program's work (``HloModule.work``) that
the programs run after the read on the same device compute too (``hlo.work_shared``), up to the next
run of the forced program itself (the loop's next iteration) and at most ``LATER_RUNS`` runs; a
program whose HLO the capture lacks shares nothing.

Why: torch_xla's read syncs the tensor it reads and nothing else. The graph it runs early (the step's
forward and backward, to read whether the gradients overflowed) leaves every other pending tensor
(the gradients, the activations the backward saved) unmaterialized, so the step's own sync runs that
work again. Without the read, the device would run it once, and sooner: the time the host waits for
the early run is not idle time the read adds but device time, so it is not charged as idle
(``attribution``, rule 2) but counted as the device time the read added (``ReadSummary.busy_added_us``).
Measured on the CPU device against the A/B arms of four corpus cases (``bench/bench_truth.py``), the
device time this predicts was 0.92-1.0 of the device time taking the reads out saved.
"""
from __future__ import annotations

import numpy as np

from xlaprof.analysis.device.programs import UNKNOWN, ProgramExecutions
from xlaprof.analysis.host.host_activity import EventSet
from xlaprof.hlo import HloModules, work_shared

LATER_RUNS = 16  # the later program runs a forced run's work is looked for in


def read_reruns(programs: ProgramExecutions, hlo: HloModules, reads: EventSet, devices: int) -> np.ndarray:
    rerun = np.zeros((devices, len(reads)))
    if not len(reads) or not len(programs):
        return rerun
    read = np.searchsorted(reads.start, programs.dispatch_us, side="right") - 1
    forced = np.flatnonzero((read >= 0) & (programs.program != UNKNOWN))
    forced = forced[programs.dispatch_us[forced] < reads.end[read[forced]]]
    shared: dict[tuple[int, tuple[int, ...]], float] = {}
    for run in forced.tolist():
        device, program, r = int(programs.device[run]), int(programs.program[run]), int(read[run])
        module = hlo.get(program)
        if module is None:
            continue
        later = _later_runs(programs, device, program, reads.end[r])
        key = (program, tuple(sorted(set(later))))
        if key not in shared:
            modules = [m for p in key[1] if (m := hlo.get(p)) is not None]
            shared[key] = work_shared(module, modules) if modules else 0.0
        rerun[device, r] += programs.dur_us[run] * shared[key]
    return rerun


def _later_runs(programs: ProgramExecutions, device: int, program: int, after: float) -> list[int]:
    """The programs a device runs from ``after`` until it runs ``program`` again, at most ``LATER_RUNS``."""
    first = int(np.searchsorted(programs.start_us, after, side="left"))
    later: list[int] = []
    for run in range(first, len(programs)):
        if programs.device[run] != device:
            continue
        if programs.program[run] == program or len(later) == LATER_RUNS:
            break
        if programs.program[run] != UNKNOWN:
            later.append(int(programs.program[run]))
    return later
