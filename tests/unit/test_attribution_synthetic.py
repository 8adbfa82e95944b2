"""Idle-time attribution on hand-built captures whose every microsecond is known.

Each scenario is laid out on a timeline in the comments; the expected figures follow from the
rules in ``xlaprof.attribution``'s docstring by hand, not from running the code.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.hlo_builder import ModuleBuilder
from tests.support.synthetic import XSpaceBuilder, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.report.json_report import gap_rows
from xlaprof.session import Session
from xlaprof.xspace import vocabulary

STEP, FWD, LOG = "train.py:10", "train.py:20", "train.py:30"
TTD = "PjRtComputationClient::TransferToDevice"
TFD = "PjRtComputationClient::TransferFromDevice"
CAUSES = ("unattributed", "host_blocked", "host_tracing", "transfer_to_device", "transfer_from_device", "compile")


def causes(**us: float) -> dict[str, float]:
    return {cause: pytest.approx(us.get(cause, 0.0), abs=1e-6) for cause in CAUSES}


def tpu_capture(host: list[tuple], devices: list[list[tuple]], window_us: float = 1000.0,
                programs: dict[int, bytes] | None = None) -> bytes:
    """``host``: (name, start, dur, stats) on the ``python`` line; ``devices``: busy (start, end), or
    (start, end, program id) for a run of one of ``programs`` (id -> its HloProto, recorded in the
    capture's metadata)."""
    builder = XSpaceBuilder()
    builder.task_environment(window_us)
    python = builder.plane("/host:CPU").line("python")
    for name, start, dur, stats in host:
        python.event(name, start, dur, **stats)
    for d, busy in enumerate(devices):
        modules = builder.plane(f"/device:TPU:{d}").line("XLA Modules")
        for start, end, *program in busy:
            modules.event(f"SyncTensorsGraph.1({program[0]})" if program else "SyncTensorsGraph.1", start, end - start)
    if programs:
        metadata = builder.plane(vocabulary.METADATA_PLANE)
        for program_id, hlo in programs.items():
            metadata.metadata_event(program_id, f"SyncTensorsGraph.1({program_id})", **{vocabulary.HLO_PROTO_STAT: hlo})
    return builder.to_bytes()


# Window [0, 1000], recording ends at 950 (the host's last event; the device's ends at 800);
# TPU:0 busy [100,200] [400,500] [700,800]: gaps G0 [0,100], G1 [200,400], G2 [500,700], G3 [800,950].
ONE_DEVICE_HOST = [
    ("train_step", 5, 575, {"step_num": 0, "source": STEP, "_r": 1}),  # step 0 [5, 580]
    (TTD, 10, 20, {}),  # G0: [0,5] nothing, [5,10] step, [10,30] input copy, [30,100] forward
    ("forward", 30, 60, {"source": FWD}),
    ("forward", 140, 125, {"source": FWD}),  # G1: compile [150,260] inside forward [140,265]
    ("XLAGraphExecutor::Compile", 150, 110, {"graph_hash": "h1"}),
    ("PjRtComputationClient::Compile", 160, 90, {}),
    ("log_loss", 270, 70, {"source": LOG}),  # G1: a read with no barrier [280,330]
    (TFD, 280, 50, {}),
    ("log_loss", 420, 140, {"source": LOG}),  # G2 opens at 500 inside the read [425,545]
    ("SyncTensorsGraphInternal", 421, 109, {}),
    ("TensorCollectionBarrier", 425, 95, {}),
    (TFD, 522, 23, {}),  # the read call's chain begins at the sync, 421: blocked [421, 545] = 124 us
    ("train_step", 580, 370, {"step_num": 1, "source": STEP, "_r": 1}),  # step 1 [580, 950]
    ("forward", 590, 55, {"source": FWD}),  # a compile [600,640] inside rule 2's share
    ("XLAGraphExecutor::Compile", 600, 40, {"graph_hash": "h2"}),
    (TTD, 650, 20, {}),
    ("log_loss", 760, 140, {"source": LOG}),  # G3 opens at 800 inside the read [765,880]
    ("TensorCollectionBarrier", 765, 95, {}),
    (TFD, 870, 10, {}),  # 10 us after the barrier: blocked 115 us
]
ONE_DEVICE_BUSY = [[(100, 200), (400, 500), (700, 800)]]
# (start, dur, cause, span, source), by hand from the rules.
ONE_DEVICE_PIECES = [
    (0, 5, "unattributed", None, None),
    (5, 5, "host_tracing", "train_step", STEP),
    (10, 20, "transfer_to_device", "train_step", STEP),  # outranks the step's tracing
    (30, 70, "host_tracing", "forward", FWD),  # forward, then the step: one piece, named at its middle (65)
    (200, 60, "compile", "forward", FWD),  # compile outranks tracing
    (260, 20, "host_tracing", "log_loss", LOG),  # forward ends at 265, the read's call starts at 270
    (280, 50, "transfer_from_device", "log_loss", LOG),  # rule 1: the read is the host's activity
    (330, 70, "host_tracing", "train_step", STEP),  # the read's call ended at 340
    (500, 124, "transfer_from_device", "log_loss", LOG),  # rule 2: min(gap 200, blocked 124)
    (624, 16, "compile", "forward", FWD),  # the compile's part after the share
    (640, 10, "host_tracing", "train_step", STEP),  # forward ended at 645
    (650, 20, "transfer_to_device", "train_step", STEP),
    (670, 30, "host_tracing", "train_step", STEP),
    (800, 115, "transfer_from_device", "log_loss", LOG),  # rule 2: min(200, 115), past the read's end
    (915, 35, "host_tracing", "train_step", STEP),
]


@pytest.fixture
def one_device(tmp_path):
    run = write_session(str(tmp_path), "one", {"host1_9012": tpu_capture(ONE_DEVICE_HOST, ONE_DEVICE_BUSY)})
    return analyze(Session.load(run))


def test_one_device_totals(one_device):
    out = analysis_json(one_device)
    assert out["window_us"] == pytest.approx(950.0)  # where the host's recording ends
    assert out["device_busy_us"] == pytest.approx(300.0)
    assert out["device_idle_us"] == pytest.approx(650.0)
    assert out["idle_by_cause_us"] == causes(unattributed=5, host_tracing=240, transfer_to_device=40,
                                             transfer_from_device=289, compile=76)
    assert out["workers"][0]["devices"] == ["TPU:0"]


def test_one_device_gap_pieces(one_device):
    gaps = [(g["start_us"], g["dur_us"], g["cause"], g["span"], g["source"]) for g in gap_rows(one_device)]
    assert len(gaps) == len(ONE_DEVICE_PIECES)
    for got, want in zip(gaps, ONE_DEVICE_PIECES):
        assert got == (pytest.approx(want[0]), pytest.approx(want[1]), *want[2:])


def test_one_device_compiles_and_reads(one_device):
    out = analysis_json(one_device)
    assert out["compiles"]["count"] == 2
    assert out["compiles"]["total_us"] == pytest.approx(150.0)
    assert out["compiles"]["by_span"] == {"forward": 2}
    assert out["compiles"]["by_graph_hash"] == {"h1": 1, "h2": 1}
    assert out["compiles"]["recompiled_spans"] == {"forward": 2}
    reads = out["transfers_from_device"]
    assert reads["count"] == 3 and reads["by_span"] == {"log_loss": 3}
    assert reads["total_us"] == pytest.approx(50 + 23 + 10)  # the transfers themselves
    assert reads["blocked_us"] == pytest.approx(50 + 124 + 115)  # the whole read calls (sync, barrier wait)


def test_one_device_steps(one_device):
    steps = analysis_json(one_device)["steps"]["host1:9012"]
    assert [(s["step"], s["start_us"], s["wall_us"]) for s in steps] == [
        (0, pytest.approx(5.0), pytest.approx(575.0)), (1, pytest.approx(580.0), pytest.approx(370.0))]
    assert [s["busy_us"] for s in steps] == [pytest.approx(200.0), pytest.approx(100.0)]
    assert steps[0]["idle_by_cause_us"] == causes(host_tracing=165, transfer_to_device=20,
                                                  transfer_from_device=130, compile=60)
    assert steps[1]["idle_by_cause_us"] == causes(host_tracing=75, transfer_to_device=20,
                                                  transfer_from_device=159, compile=16)


def test_one_device_findings_ranked(one_device):
    # The unattributed time lies at the window's edges: a capture_edge finding, not a cause.
    found = [(f.kind, f.lost_us, f.span) for f in one_device.findings]
    assert [(k, pytest.approx(us)) for k, us, _ in found] == [
        ("transfer_from_device", 289), ("host_tracing", 150), ("recompilation", 76),
        ("host_tracing", 70), ("transfer_to_device", 40), ("host_tracing", 20), ("capture_edge", 5)]
    assert [span for _, _, span in found] == ["log_loss", "train_step", "forward", "forward", "train_step",
                                              "log_loss", None]
    assert one_device.findings[0].source == LOG and one_device.findings[0].count == 3


# Window [0, 1000], one step [0, 1000]; a read blocks the host [110, 590] (barrier + transfer).
# TPU:0 idles [300,400]: shorter than the block, so all of it is the read's.
# TPU:1 idles [200,700]: the read's share is 480 us, the last 20 us are the step's tracing.
MULTI_HOST = [
    ("train_step", 0, 1000, {"step_num": 0, "source": STEP, "_r": 1}),
    ("log_loss", 100, 500, {"source": LOG}),
    ("TensorCollectionBarrier", 110, 390, {}),
    (TFD, 510, 80, {}),
]
MULTI_BUSY = [[(0, 300), (400, 1000)], [(0, 200), (700, 1000)]]


def test_multi_device_rule_two_split(tmp_path):
    run = write_session(str(tmp_path), "multi", {"host2_9012": tpu_capture(MULTI_HOST, MULTI_BUSY)})
    result = analyze(Session.load(run))
    out = analysis_json(result)
    assert out["workers"][0]["devices"] == ["TPU:0", "TPU:1"]
    assert out["device_busy_us"] == pytest.approx(900 + 500)
    assert out["device_idle_us"] == pytest.approx(100 + 500)
    assert out["idle_by_cause_us"] == causes(transfer_from_device=580, host_tracing=20)
    gaps = [(g["device"], g["start_us"], g["dur_us"], g["cause"], g["span"]) for g in gap_rows(result)]
    assert gaps == [("TPU:0", pytest.approx(300), pytest.approx(100), "transfer_from_device", "log_loss"),
                    ("TPU:1", pytest.approx(200), pytest.approx(480), "transfer_from_device", "log_loss"),
                    ("TPU:1", pytest.approx(680), pytest.approx(20), "host_tracing", "train_step")]
    (step,) = out["steps"]["host2:9012"]
    assert step["busy_us"] == pytest.approx(1400)
    assert step["idle_by_cause_us"] == causes(transfer_from_device=580, host_tracing=20)


# Window [0, 1000], one step; a read's call [200, 450]: its sync builds and runs the graph it needs
# (TPU:0 busy [300, 400]), then the transfer: blocked 250 us. G1 [100, 300]: the read holds [200, 300]
# (rule 1). G2 [400, 800] opens inside the read: rule 2 gives it what is left of the 250 us, 150.
EARLY_HOST = [
    ("train_step", 0, 1000, {"step_num": 0, "source": STEP, "_r": 1}),
    ("log_loss", 195, 260, {"source": LOG}),
    ("SyncTensorsGraphInternal", 200, 205, {}),
    (TFD, 410, 40, {}),
]


def test_a_read_is_charged_at_most_its_blocked_time(tmp_path):
    run = write_session(str(tmp_path), "early", {"host3_9012": tpu_capture(EARLY_HOST, [[(0, 100), (300, 400),
                                                                                          (800, 1000)]])})
    result = analyze(Session.load(run))
    out = analysis_json(result)
    assert out["transfers_from_device"]["blocked_us"] == pytest.approx(250)
    assert out["idle_by_cause_us"] == causes(transfer_from_device=250, host_tracing=350)
    gaps = [(g["start_us"], g["dur_us"], g["cause"]) for g in gap_rows(result)]
    assert gaps == [(pytest.approx(100), pytest.approx(100), "host_tracing"),
                    (pytest.approx(200), pytest.approx(100), "transfer_from_device"),
                    (pytest.approx(400), pytest.approx(150), "transfer_from_device"),
                    (pytest.approx(550), pytest.approx(250), "host_tracing")]


def _graph(program_id: int, batch: int, update: bool) -> bytes:
    """A forward's HLO (``batch`` rows), and with ``update`` the weight update after it."""
    b = ModuleBuilder(f"SyncTensorsGraph.{program_id}", program_id)
    x, w = b.parameter(0, "f32", (batch, 256)), b.parameter(1, "f32", (256, 64))
    h = b.fusion("relu_fusion", "kLoop", "f32", (batch, 64), [b.op("dot.1", "dot", "f32", (batch, 64), [x, w])],
                 ["maximum"])
    loss = b.op("reduce.1", "reduce", "f32", (batch,), [h])  # per-row losses
    if update:
        return b.to_bytes([loss, b.op("subtract.1", "subtract", "f32", (256, 64), [w, w])])
    return b.to_bytes([loss])


# EARLY_HOST, the read's sync queuing program 1 at 280 (dispatched at 290, its run [300, 400]), the
# step's sync queuing program 2 at 785 (dispatched at 790, its run [800, 1000]). Where program 2
# computes program 1's work again (the read synced its loss alone: the step's graph reruns the
# forward), the read's 100 us of device time are not idle time it adds: rule 2 gives G2 150 - 100 =
# 50 us, and the 100 us are device time the read added. Where program 2 is other work (another batch
# size), the read is charged as before.
PROGRAM_HOST = EARLY_HOST + [
    ("ScheduleSyncTensorsGraph", 280, 3, {}),
    ("PjRtComputationClient::ExecuteComputation", 290, 2, {}),
    ("ScheduleSyncTensorsGraph", 785, 3, {}),
    ("PjRtComputationClient::ExecuteComputation", 790, 2, {}),
]


@pytest.mark.parametrize("step_batch, rerun", [(32, 100.0), (48, 0.0)])
def test_a_read_whose_graph_the_step_runs_again_is_charged_its_blocked_time_less_that_device_time(
        tmp_path, step_batch, rerun):
    capture = tpu_capture(PROGRAM_HOST, [[(0, 100), (300, 400, 1), (800, 1000, 2)]],
                          programs={1: _graph(1, 32, update=False), 2: _graph(2, step_batch, update=True)})
    result = analyze(Session.load(write_session(str(tmp_path), "rerun", {"host3_9012": capture})))
    out = analysis_json(result)
    assert out["transfers_from_device"]["blocked_us"] == pytest.approx(250)
    assert out["idle_by_cause_us"] == causes(transfer_from_device=250 - rerun, host_tracing=350 + rerun)
    assert result.reads.busy_added_us == pytest.approx(rerun)
    (reading,) = [f for f in result.findings if f.kind.value == "transfer_from_device"]
    assert reading.cost_us == pytest.approx(250)  # idle charged + device time added
    assert result.reads.rerun_us == pytest.approx(rerun)
    assert ("early graphs' device work again" in reading.detail) == bool(rerun), reading.detail
    assert ("the step's sync ran that work again" in reading.advice) == bool(rerun), reading.advice


def test_cpu_device_layout(tmp_path):
    """The CPU XLA device: the program runs on PJRT client threads of the host plane."""
    builder = XSpaceBuilder()
    builder.task_environment(500.0)
    host = builder.plane("/host:CPU")
    python = host.line("python")
    python.event("train_step", 50, 400, step_num=0, source=STEP, _r=1)
    python.event("TensorCollectionBarrier", 150, 55)
    python.event(TFD, 210, 20)  # blocked [150, 230]: 80 us
    pool = host.line("tf_XLAPjRtCpuClient/1")
    pool.event("PjRtCpuExecutable::ExecuteHelper", 95, 110)  # not execution: ThunkExecutor is
    for start in (100, 300):
        pool.event("ThunkExecutor::Execute", start, 100)
    run = write_session(str(tmp_path), "cpu", {"cpu_9012": builder.to_bytes()})
    out = analysis_json(analyze(Session.load(run)))
    assert out["workers"][0]["devices"] == ["CPU:0"]
    assert out["device_busy_us"] == pytest.approx(200.0)
    # [0,50] nothing, [50,100] step; [200,280] the read's share (80 < gap 100), [280,300] step;
    # [400,450] step; the host's recording ends at 450, so [450,500] is not analysed.
    assert out["window_us"] == pytest.approx(450.0)
    assert out["idle_by_cause_us"] == causes(unattributed=50, host_tracing=120, transfer_from_device=80)
    assert out["transfers_from_device"]["blocked_us"] == pytest.approx(80.0)


def test_cli_json_contract_on_synthetic_session(tmp_path):
    captures = {"host1_9012": tpu_capture(ONE_DEVICE_HOST, ONE_DEVICE_BUSY),
                "host2_9012": tpu_capture(MULTI_HOST, MULTI_BUSY),
                "host3_9012": training_capture(steps=6, devices=2, ops_per_step=4, read_every=2,
                                               recompile_every=3)}
    run = write_session(str(tmp_path), "cli", captures, manifest={"created_unix": 1.0})
    done = subprocess.run([sys.executable, "-m", "xlaprof", "analyze", run, "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for key in ("session", "workers", "window_us", "device_busy_us", "device_idle_us", "idle_by_cause_us",
                "compiles", "transfers_from_device", "gaps", "findings"):
        assert key in out
    assert set(out["idle_by_cause_us"]) == set(CAUSES)
    assert sum(out["idle_by_cause_us"].values()) == pytest.approx(out["device_idle_us"], abs=1e-6)
    assert {w["host"] for w in out["workers"]} == {"host1:9012", "host2:9012", "host3:9012"}
    by_host = {w["host"]: w for w in out["workers"]}
    assert by_host["host1:9012"]["idle_us"] == pytest.approx(650.0)
    assert by_host["host2:9012"]["idle_us"] == pytest.approx(600.0)
    assert out["compiles"]["count"] == 2 + 2  # h1, h2 and the training capture's steps 0 and 3
    assert {"worker", "device", "start_us", "dur_us", "cause", "span", "source"} <= set(out["gaps"][0])
    cost = [f["lost_us"] + f["busy_added_us"] for f in out["findings"]]  # ranked by cost (contract 2.1)
    assert cost == sorted(cost, reverse=True)
    assert {"kind", "lost_us", "span", "source", "advice"} <= set(out["findings"][0])
