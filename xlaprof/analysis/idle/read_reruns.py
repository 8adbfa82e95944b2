"""Device time a read spends on work the device runs again: the partial graph it forced, rerun later.

Contract: ``read_reruns(programs, hlo, reads, devices)`` returns, per device (rows, in the worker's
device order) and per read of ``reads`` (``HostActivity.transfers_from_device``, columns, in its
order), the device time (microseconds) of the program runs that read forced whose work a later
program runs again. A read forced a run where the read's own thread queued it during the read's call
(``ProgramExecutions.scheduled_us`` inside it, ``scheduled_line`` the read's: a step's graph that
the sync before the read queued may be dispatched during it, from torch_xla's execution thread),
outside an explicit sync (``by_sync``: a step closure's read runs inside the sync that queued the
step's graph, and the sampler may place the read's start before that), of a program no explicit
sync queued anywhere in the capture (that is a step's graph: on the CPU device a run is named by
the first op after its execute event, which may be another program's still running, so a read's
small graph run beside the step's can carry the step's program); where the capture does not say
when a run was queued, where it was dispatched during the call (its ``dispatch_us``, on any
thread). The work run again is the share of the forced program's work (``HloModule.work``) that
one program run after the read on the same device computes too (``hlo.shared_work``; the one that
computes the most), looked for up to the next run of the forced program itself (the loop's next
iteration) and over at most ``LATER_RUNS`` runs; a program whose HLO the capture lacks shares
nothing. A share that is under ``MIN_PART_OF_LATER`` of that later program's own work is none: the
work a step's sync reruns is the prefix of the step a read needed (a forward, a loss, a backward),
a large part of the step's graph, while a few instructions whose shapes recur in a far larger graph
are a new small computation on values already computed (a norm or a comparison read after the sync:
``print(w.norm())``, a step closure's ``latents.norm().item()``, 3% of the next graph's work).

Why: torch_xla's read syncs the tensor it reads and nothing else. The graph it runs early (the step's
forward and backward, to read whether the gradients overflowed) leaves every other pending tensor
(the gradients, the activations the backward saved) unmaterialized, so the step's own sync runs that
work again. Without the read, the device would run it once, and sooner: the time the host waits for
the early run is not idle time the read adds but device time, so it is not charged as idle
(``attribution``, rule 2) but counted as the device time the read added (``ReadSummary.busy_added_us``).
Measured on the CPU device against the A/B arms of five corpus cases whose reads force the step's
graph (``bench/bench_truth.py``), the device time this predicts was 0.80-1.0 of the ExecuteTime
taking the reads out saved; against the device time saved (the arms' program runs, medians over their
pairs of blocks: ExecuteTime also counts each run's launch, which the extra run adds as idle time),
0.97-1.02 on four of them and 0.91-1.29 on fallback_backward over five runs.
"""
from __future__ import annotations

import numpy as np

from xlaprof.analysis.device.programs import UNKNOWN, ProgramExecutions
from xlaprof.analysis.host.host_activity import EventSet
from xlaprof.hlo import HloModule, HloModules, shared_work

LATER_RUNS = 16  # the later program runs a forced run's work is looked for in
# A forced graph's work counts as run again only where it is at least this part of the later graph's own work
# (true reruns in the corpus: 0.38-0.96 of it; a norm read after the sync: 0.03).
MIN_PART_OF_LATER = 0.1


def read_reruns(programs: ProgramExecutions, hlo: HloModules, reads: EventSet, devices: int) -> np.ndarray:
    rerun = np.zeros((devices, len(reads)))
    if not len(reads) or not len(programs):
        return rerun
    queued = ~np.isnan(programs.scheduled_us)
    when = np.where(queued, programs.scheduled_us, programs.dispatch_us)
    read = np.searchsorted(reads.start, when, side="right") - 1
    steps = np.isin(programs.program, programs.program[programs.by_sync])  # programs an explicit sync ran
    forced = np.flatnonzero((read >= 0) & (programs.program != UNKNOWN) & ~steps)
    forced = forced[(when[forced] < reads.end[read[forced]])
                    & (~queued[forced] | (programs.scheduled_line[forced] == reads.line[read[forced]]))]
    shared: dict[tuple[int, tuple[int, ...]], float] = {}
    for run in forced.tolist():
        device, program, r = int(programs.device[run]), int(programs.program[run]), int(read[run])
        module = hlo.get(program)
        if module is None:
            continue
        later = _later_runs(programs, device, program, reads.end[r])
        key = (program, tuple(sorted(set(later))))
        if key not in shared:
            shared[key] = _share_run_again(module, [m for p in key[1] if (m := hlo.get(p)) is not None])
        rerun[device, r] += programs.dur_us[run] * shared[key]
    return rerun


def _share_run_again(forced: HloModule, later: list[HloModule]) -> float:
    """The share of ``forced``'s work that the later module computing the most of it runs again (0 where
    that is under ``MIN_PART_OF_LATER`` of its own work)."""
    if not forced.work_weight:
        return 0.0
    weight, module = max(((shared_work(forced, m), m) for m in later), key=lambda found: found[0], default=(0, None))
    if module is None or weight < MIN_PART_OF_LATER * module.work_weight:
        return 0.0
    return weight / forced.work_weight


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
