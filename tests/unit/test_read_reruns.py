"""The device time a read spends on a partial graph that later graphs run again (``read_reruns``),
from the programs' HLO built here."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.hlo_builder import ModuleBuilder
from xlaprof.analysis.device.programs import UNKNOWN, ProgramExecutions
from xlaprof.analysis.host.host_activity import EventSet
from xlaprof.analysis.idle.read_reruns import LATER_RUNS, read_reruns
from xlaprof.hlo import HloModules, work_shared


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
})


def _runs(*runs: tuple[float, float, int, float]) -> ProgramExecutions:
    """(dispatch, start, program, duration) per run of device 0."""
    n = len(runs)
    dispatch, start, program, dur = (np.array(c, float) for c in zip(*runs))
    return ProgramExecutions(np.zeros(n, np.int32), start, dur, program.astype(np.int64), np.full(n, -1), dispatch)


def _reads(*intervals: tuple[float, float]) -> EventSet:
    return EventSet(np.arange(len(intervals)), np.array([a for a, _ in intervals], float),
                    np.array([b for _, b in intervals], float), np.zeros(len(intervals), np.int32))


def test_the_share_of_a_graphs_work_that_another_computes_weighs_each_instruction_by_its_elements():
    forward, step, other, half = (HLO.get(p) for p in (1, 2, 3, 4))
    assert work_shared(forward, [step]) == 1.0
    assert work_shared(forward, [other]) == 0.0
    assert work_shared(forward, [half]) == pytest.approx(4096 / (4096 + 4096 + 64))
    assert work_shared(forward, [half, other]) == work_shared(forward, [half])
    assert work_shared(step, [forward]) == pytest.approx(8256 / (8256 + 4096))  # the update is not the forward's


def test_a_run_the_read_dispatched_counts_as_much_of_its_time_as_later_graphs_rerun():
    runs = _runs((15, 20, 1, 100.0), (200, 210, 2, 150.0))  # the read [10, 150] forced program 1; the step reruns it
    assert read_reruns(runs, HLO, _reads((10, 150)), 1).tolist() == [[100.0]]
    runs = _runs((15, 20, 1, 100.0), (200, 210, 4, 150.0))
    assert read_reruns(runs, HLO, _reads((10, 150)), 1)[0, 0] == pytest.approx(100 * 4096 / 8256)
    runs = _runs((15, 20, 1, 100.0), (200, 210, 3, 150.0))
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
