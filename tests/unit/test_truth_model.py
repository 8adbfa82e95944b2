"""The truth model's A/B read share (tests/support/truth/table.py): what taking the reads out saves
replaces the metric model's read time, the difference moved to or from tracing first, then blocked;
the part of it that is the host's other work running slower with the reads makes it a range."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.support.truth.table import Truth, nearest_read_share, ab_read_share, host_slowdown_share
from tests.support.workloads.ab_harness import FOREIGN_MAX_SHARE, NO_READS_ARM, READS_ARM


def _block(wall_us: float, execute_us: float, foreign: float = 0.0, cpu_us: float = 0.0, read_us: float = 0.0) -> dict:
    return {"start": 0.0, "wall_us": wall_us, "cpu_us": cpu_us, "runnable_us": 0.0, "runtime_cpu_us": 0.0,
            "metrics": {"execute_us": execute_us, "read_us": read_us}, "foreign": foreign}


# 1,000 us of wall, 600 of them the main thread on a CPU, 100 a read's transfer, no device work.
STEP = _block(1000.0, 0.0, cpu_us=600.0, read_us=100.0)


def _capture(ab: dict | None = None) -> dict:
    return {"steps": [STEP], "session": "window", **({"ab": ab, "ab_session": "ab"} if ab else {})}


LINES = {"reads": {}, "compiles": {}, "fallbacks": {}}


def test_the_ab_saving_over_the_idle_with_reads_is_the_read_share():
    ab = {READS_ARM: [_block(1100, 100), _block(1000, 100), _block(1200, 100)],
          NO_READS_ARM: [_block(700, 100), _block(800, 100), _block(800, 100)]}
    # idle with reads 1000, 900, 1100 (median 1000); without 600, 700, 700; savings 400, 200, 400
    share, half_width = ab_read_share(ab)
    assert share == pytest.approx(0.4)
    assert 0 < half_width < 0.4  # three pairs that disagree: an interval, not a point


def test_pairs_another_load_disturbed_are_left_out_unless_too_few_were_quiet():
    quiet = [(_block(1100, 100), _block(700, 100)), (_block(1000, 100), _block(600, 100)),
             (_block(1050, 100), _block(650, 100))]  # savings 400
    disturbed = (_block(1600, 100), _block(700, 100, foreign=FOREIGN_MAX_SHARE + 0.1))  # saving 900
    pairs = [*quiet, disturbed, disturbed]
    ab = {READS_ARM: [w for w, _ in pairs], NO_READS_ARM: [o for _, o in pairs]}
    assert ab_read_share(ab)[0] == pytest.approx(400 / 950)  # the quiet pairs: idle 1000, 900 and 950 with reads
    ab = {READS_ARM: [disturbed[0]] * 3, NO_READS_ARM: [disturbed[1]] * 3}
    assert ab_read_share(ab)[0] == pytest.approx(900 / 1500)  # nothing quiet: every pair counts
    few = [quiet[0], disturbed, disturbed]
    ab = {READS_ARM: [w for w, _ in few], NO_READS_ARM: [o for _, o in few]}
    assert ab_read_share(ab)[0] == pytest.approx(900 / 1500)  # one quiet pair is no measurement: all count


def test_a_larger_ab_read_share_is_taken_from_tracing_first_then_blocked():
    without_arm = Truth.of(_capture(), LINES)
    assert without_arm.idle_us == {"compile": 0.0, "transfer_from_device": 100.0, "host_tracing": 600.0,
                                   "host_blocked": 300.0}
    assert (without_arm.rows, without_arm.session) == ([STEP], "window")
    saving_80_of_100 = {READS_ARM: [STEP], NO_READS_ARM: [_block(200, 0)]}
    with_arm = Truth.of(_capture(saving_80_of_100), LINES)
    assert with_arm.idle_us == {"compile": 0.0, "transfer_from_device": 800.0, "host_tracing": 0.0, "host_blocked": 200.0}


def test_torchdynamos_time_compiling_frames_is_compile_taken_from_the_main_threads_work():
    step = _block(1000.0, 0.0, cpu_us=600.0, read_us=100.0)
    step["metrics"].update(compile_us=100.0, dynamo_compile_us=300.0)  # dynamo: 300 of the 600 us on a CPU
    idle = Truth.of({"steps": [step], "session": "window"}, LINES).idle_us
    assert idle == {"compile": 400.0, "transfer_from_device": 100.0, "host_tracing": 300.0, "host_blocked": 200.0}


def test_the_main_thread_waiting_for_the_gil_the_stack_sampler_holds_is_tracing_not_blocked():
    step = dict(_block(1000.0, 0.0, cpu_us=600.0, read_us=100.0), sampler_gil_us=120.0)
    idle = Truth.of({"steps": [step], "session": "window"}, LINES).idle_us
    assert idle == {"compile": 0.0, "transfer_from_device": 100.0, "host_tracing": 720.0, "host_blocked": 180.0}


def test_a_smaller_ab_read_share_gives_the_difference_back_to_tracing():
    saving_nothing = {READS_ARM: [STEP], NO_READS_ARM: [_block(1200, 0)]}
    idle = Truth.of(_capture(saving_nothing), LINES).idle_us
    assert idle == {"compile": 0.0, "transfer_from_device": 0.0, "host_tracing": 700.0, "host_blocked": 300.0}


def test_with_an_arm_the_blocks_with_reads_are_modelled_and_scored_in_their_own_capture():
    # The window's step says 100 us of reads; the blocks with reads (counted pairs only) say 300 and 100.
    disturbed = (_block(5000, 0, cpu_us=100.0, read_us=4000.0), _block(800, 0, foreign=1.0))
    ab = {READS_ARM: [_block(1000, 0, cpu_us=600.0, read_us=300.0), disturbed[0]] + [STEP] * 2,
          NO_READS_ARM: [_block(900, 0), disturbed[1]] + [_block(900, 0)] * 2}
    truth = Truth.of(_capture(ab), LINES)
    assert truth.session == "ab" and truth.rows == [ab[READS_ARM][0], STEP, STEP]
    assert truth.windows_ns == [(0, 1_000_000)] * 3
    assert sum(truth.idle_us.values()) == pytest.approx(3000.0)  # the three blocks' idle, not the window's 1000


def _scored(read_starts_us: list[float], read_ends_us: list[float]) -> SimpleNamespace:
    """An analysis of one worker whose clock starts at the Unix epoch, holding only its read marks."""
    reads = SimpleNamespace(start=np.array(read_starts_us), end=np.array(read_ends_us))
    return SimpleNamespace(analysed=[SimpleNamespace(host=SimpleNamespace(transfers_from_device=reads),
                                                     worker=SimpleNamespace(space=SimpleNamespace(origin_ns=0)))])


def test_the_host_running_slower_outside_the_reads_is_measured_as_a_share_of_the_idle_with_reads():
    with_reads = dict(_block(1000, 100, cpu_us=800.0), start=0.0)  # 300 us of reads: 700 us outside them
    without = dict(_block(600, 100, cpu_us=500.0), start=0.01)  # 600 us, all outside reads
    scored = _scored([100.0, 500.0, 20_000.0], [300.0, 600.0, 20_100.0])  # the last read is in no block
    assert host_slowdown_share(scored, [(with_reads, without)]) == pytest.approx(100 / 900)
    faster = dict(_block(800, 100, cpu_us=500.0), start=0.01)  # the host's work outside reads took longer without them
    assert host_slowdown_share(scored, [(with_reads, faster)]) == 0.0
    # Read marks too short (none at all) would say 400 us: the main thread's clocks allow 300 more, no more.
    assert host_slowdown_share(_scored([], []), [(with_reads, without)]) == pytest.approx(300 / 900)


def test_the_read_share_is_scored_at_the_point_of_its_range_nearest_the_analysis():
    truth = {"compile": 0.0, "transfer_from_device": 0.6, "host_tracing": 0.3, "host_blocked": 0.1}
    inside = nearest_read_share(truth, 0.45, 0.2)
    assert inside == pytest.approx({"compile": 0.0, "transfer_from_device": 0.45, "host_tracing": 0.45,
                                    "host_blocked": 0.1})
    assert nearest_read_share(truth, 0.3, 0.2)["transfer_from_device"] == pytest.approx(0.4)  # the range's floor
    assert nearest_read_share(truth, 0.7, 0.2) == pytest.approx(truth)  # above the whole saving: scored against it
    assert nearest_read_share(truth, 0.3, 0.0) == pytest.approx(truth)  # no slowdown: the saving, a point
