"""The device time a read spends on a partial graph that later graphs run again (``read_reruns``),
from the programs' HLO built here."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.hlo_builder import ModuleBuilder
from xlaprof.analysis.device.programs import UNKNOWN, ProgramExecutions
from xlaprof.analysis.host.host_activity import EventSet
from xlaprof.analysis.idle.read_reruns import LATER_RUNS, MIN_PART_OF_LATER, read_reruns
from xlaprof.hlo import HloModules, shared_work


def _module(program_id: int, *ops: tuple[str, tuple[int, ...]]) -> bytes:
    b = ModuleBuilder(f"SyncTensorsGraph.{program_id}", program_id)
    last = b.parameter(0, "f32", (8, 8))
    for k, (opcode, dims) in enumerate(ops):
        last = b.op(f"{opcode}.{k}", opcode, "f32", dims, [last])
    return b.to_bytes([last])


FORWARD = (("dot", (64, 64)), ("exponential", (64, 64)), ("reduce", (64,)))
HLO = HloModules({
    1: ("forward", _module(1, *FORWARD)),  # what a read forces: the forward up to the loss
    2: ("step", _module(2, *FORWARD, ("subtract", (64, 64)))),  # the step's graph: the forward again, and more
    3: ("other", _module(3, ("dot", (16, 16)))),  # other work
    4: ("half", _module(4, ("dot", (64, 64)))),  # half of the forward's weight (and its reduce's 64 of 8256)
    5: ("norm", _module(5, ("reduce", (64,)))),  # a small reduction whose shape the step's graph holds too
})


def _runs(*runs: tuple, scheduled: list[tuple[float, int, bool]] | None = None) -> ProgramExecutions:
    """(dispatch, start, program, duration) per run of device 0; ``scheduled``: per run, when and on
    which line it was queued, and whether by an explicit sync (unknown without)."""
    n = len(runs)
    dispatch, start, program, dur = (np.array(c, float) for c in zip(*runs))
    at, line, by_sync = (np.array(c) for c in zip(*scheduled)) if scheduled else (
        np.full(n, np.nan), np.full(n, -1), np.zeros(n, bool))
    return ProgramExecutions(np.zeros(n, np.int32), start, dur, program.astype(np.int64), np.full(n, -1), dispatch,
                             at.astype(float), line.astype(np.int32), by_sync.astype(bool))


def _reads(*intervals: tuple[float, float]) -> EventSet:
    return EventSet(np.arange(len(intervals)), np.array([a for a, _ in intervals], float),
                    np.array([b for _, b in intervals], float), np.zeros(len(intervals), np.int32))


def test_the_work_two_graphs_share_weighs_each_instruction_by_its_elements():
    forward, step, other, half = (HLO.get(p) for p in (1, 2, 3, 4))
    assert forward.work_weight == 4096 + 4096 + 64 and step.work_weight == forward.work_weight + 4096
    assert shared_work(forward, step) == forward.work_weight
    assert shared_work(forward, other) == 0
    assert shared_work(forward, half) == 4096
    assert shared_work(step, forward) == forward.work_weight  # the update is not the forward's


def test_a_run_the_read_dispatched_counts_as_much_of_its_time_as_later_graphs_rerun():
    runs = _runs((15, 20, 1, 100.0), (200, 210, 2, 150.0))  # the read [10, 150] forced program 1; the step reruns it
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[100.0]]
    runs = _runs((15, 20, 1, 100.0), (200, 210, 4, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150)), 1)[0, 0] == pytest.approx(100 * 4096 / 8256)
    runs = _runs((15, 20, 1, 100.0), (200, 210, 3, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]


def test_a_small_graph_whose_shapes_recur_in_a_far_larger_one_is_not_run_again():
    # A norm read after the sync: its one reduction is 64 of the step graph's 12352, under MIN_PART_OF_LATER.
    assert 64 < MIN_PART_OF_LATER * HLO.get(2).work_weight
    runs = _runs((15, 20, 5, 10.0), (200, 210, 2, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]
    runs = _runs((15, 20, 5, 10.0), (200, 210, 1, 150.0), (300, 310, 2, 150.0))  # the best match decides
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]


def test_a_run_the_reads_thread_queued_before_it_is_not_forced_though_dispatched_during_it():
    # A step closure's read right after the sync: the step's graph (program 1, queued at 5 on the
    # read's line 0) is dispatched at 15, inside the read [10, 150], from torch_xla's execution thread.
    runs = _runs((15, 20, 1, 100.0), (200, 210, 2, 150.0), scheduled=[(5, 0, True), (190, 0, True)])
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]
    runs = _runs((15, 20, 1, 100.0), (200, 210, 2, 150.0), scheduled=[(12, 0, False), (190, 0, True)])  # its own
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[100.0]]
    runs = _runs((15, 20, 1, 100.0), (200, 210, 2, 150.0), scheduled=[(12, 3, False), (190, 0, True)])  # another's
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]
    # The sampler placed the read's start before the sync that queued the step's graph ran its closure.
    runs = _runs((15, 20, 1, 100.0), (200, 210, 2, 150.0), scheduled=[(12, 0, True), (190, 0, True)])
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]
    # A run the read queued, but of a program an explicit sync runs too (named by the step's op on the
    # CPU device): a step's graph, not a partial one the read forced.
    runs = _runs((15, 20, 1, 100.0), (200, 210, 2, 150.0), (400, 410, 1, 100.0),
                 scheduled=[(12, 0, False), (190, 0, True), (390, 0, True)])
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]


def test_a_run_dispatched_outside_the_read_or_of_an_unknown_program_counts_nothing():
    # The step's graph dispatched before the read and running during it (a closure's read after the sync).
    runs = _runs((5, 20, 1, 100.0), (200, 210, 2, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]
    runs = _runs((15, 20, UNKNOWN, 100.0), (200, 210, 2, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]
    runs = _runs((15, 20, 9, 100.0), (200, 210, 2, 150.0))  # program 9: no HLO in the capture
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]


def test_later_graphs_are_looked_for_until_the_forced_program_runs_again():
    # The next iteration's read forces program 1 again before any step graph: nothing reran it.
    runs = _runs((15, 20, 1, 100.0), (215, 220, 1, 100.0), (400, 410, 2, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150), (210, 350)), 1).tolist() == [[0.0, 100.0]]
    # Nor past LATER_RUNS other runs.
    others = [(200 + k, 200 + k, 3, 1.0) for k in range(LATER_RUNS)]
    runs = _runs((15, 20, 1, 100.0), *others, (400, 410, 2, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[0.0]]
