"""Device time by graph, HLO instruction and Python line, on captures built in code with exact
truth: TPU-shaped (XLA Modules / XLA Ops lines) and CPU-shaped (thunk events on the host plane)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.synthetic import OP_FILL, StepProgram, TrainingShape, XSpaceBuilder, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.device import device_profile
from xlaprof.analysis.device.device_profile import NO_SOURCE, _children_time
from xlaprof.report import analysis_json, render_text
from xlaprof.session import Session

OPS = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
MODULE_US = 1500.0


def test_tpu_graphs_ops_and_lines_are_exact(tmp_path):
    small = StepProgram(11, "a" * 32, mlp_module(11, 8), OPS)
    large = StepProgram(22, "b" * 32, mlp_module(22, 16), OPS)
    data = training_capture(steps=5, devices=2, programs=[small, large, small, large, large],
                            shape=TrainingShape(jitter_us=0, module_us=MODULE_US))
    analysis = analyze(Session.load(write_session(str(tmp_path), "run", {"w0_9012": data})))
    profile = analysis.device_profile
    assert [(g.program_id, g.executions) for g in profile.graphs] == [(22, 6), (11, 4)]  # runs x devices
    graph = profile.graphs[0]
    assert graph.total_us == pytest.approx(6 * MODULE_US) and graph.median_us == pytest.approx(MODULE_US)
    assert (graph.span, graph.source, graph.compiled_in_window, graph.graph_hash) == (
        "train_step", "train.py:30", True, "b" * 32)
    assert [op.name for op in graph.ops] == list(MLP_OPS)  # by self time, most first
    for op in graph.ops:
        category, share = MLP_OPS[op.name]
        assert op.category == category and op.occurrences == 6
        assert op.total_us == pytest.approx(6 * MODULE_US * share * OP_FILL) == op.self_us
    assert graph.ops[0].source == "train.py:15" and graph.ops[-1].source is None  # copy.1 has no metadata
    lines = {line.source: line.self_us for line in profile.lines}
    per_run = MODULE_US * OP_FILL
    assert lines["train.py:15"] == pytest.approx(10 * per_run * (0.40 + 0.25 + 0.20))
    assert lines["train.py:17"] == pytest.approx(10 * per_run * 0.10)
    assert lines[NO_SOURCE] == pytest.approx(10 * per_run * 0.05)
    report = analysis_json(analysis)
    assert report["graphs"][0]["ops"][0]["name"] == "dot.1" and report["graphs"][0]["ops_total"] == 5
    assert report["device_time_by_line"][0]["source"] == "train.py:15"
    text = render_text(analysis)
    assert "Device time by graph" in text and "Device time by Python line" in text
    assert "  SyncTensorsGraph.93 (program 22) on w0:9012, dispatched in train_step\n" in text


def _cpu_capture() -> bytes:
    """A CPU-device capture: two executions of program 5 on the PJRT CPU client thread, each with
    a dot, a ``call`` holding a nested fusion, and the runtime's "end:" markers."""
    builder = XSpaceBuilder()
    builder.task_environment(2000.0)
    host = builder.plane("/host:CPU")
    python = host.line("python", line_id=1)
    client = host.line("tf_XLAPjRtCpuClient/2", line_id=2)
    for k, at in enumerate((100.0, 1100.0)):
        python.event("train_step", at - 90, 400, step_num=k, source="train.py:30", _r=1)
        python.event("PjRtComputationClient::ExecuteComputation", at - 20, 5)
        client.event("ThunkExecutor::Execute", at, 300)
        client.event("dot.1", at + 10, 100, hlo_op="dot.1", hlo_module="SyncTensorsGraph.93", program_id=5)
        client.event("end: dot.1", at + 111, 1)
        client.event("call", at + 120, 150, hlo_op="call", hlo_module="SyncTensorsGraph.93", program_id=5)
        client.event("add_relu_fusion.clone", at + 125, 120, hlo_op="add_relu_fusion.clone",
                     hlo_module="SyncTensorsGraph.93", program_id=5)
    metadata = builder.plane("/host:metadata")
    metadata.metadata_event(5, "SyncTensorsGraph.93(5)", **{"Hlo Proto": mlp_module(5, 8)})
    return builder.to_bytes()


def test_cpu_thunks_give_programs_self_times_and_sources(tmp_path):
    analysis = analyze(Session.load(write_session(str(tmp_path), "cpu", {"h_1": _cpu_capture()})))
    assert analysis.workers[0].programs.program.tolist() == [5, 5]
    (graph,) = analysis.device_profile.graphs
    assert (graph.program_id, graph.module, graph.executions, graph.total_us) == (5, "SyncTensorsGraph.93", 2, 600.0)
    assert graph.span == "train_step" and not graph.compiled_in_window
    ops = {op.name: op for op in graph.ops}
    assert set(ops) == {"dot.1", "call", "add_relu_fusion.clone"}  # "end:" markers are no ops
    assert (ops["call"].total_us, ops["call"].self_us) == (300.0, 60.0)  # 2 x (150 - 120 nested)
    assert ops["add_relu_fusion.clone"].category == "loop fusion" and ops["add_relu_fusion.clone"].source == "train.py:15"
    assert ops["dot.1"].total_us == ops["dot.1"].self_us == 200.0


def test_a_cpu_program_run_counts_once_with_its_pool_threads(tmp_path):
    """torch_xla 2.9's CPU layout: per PjRt execute an ExecuteHelper on the dispatching thread, an
    executor and its "(wait for completion)" on the client thread, and nested executors on the
    intra-op pool's threads. Two runs of program 5 and one of program 6: three executions, not the
    eleven executor events, and the runs' device time is the busy time."""
    builder = XSpaceBuilder()
    builder.task_environment(4000.0)
    host = builder.plane("/host:CPU")
    python = host.line("python", line_id=1)
    client = host.line("tf_XLAPjRtCpuClient/2", line_id=2)
    pools = [host.line(f"tf_XLAEigen/{k}", line_id=3 + k) for k in range(2)]
    for k, (at, program) in enumerate(((100.0, 5), (1100.0, 5), (2100.0, 6))):
        python.event("train_step", at - 90, 600, step_num=k, source="train.py:30", _r=1)
        python.event("PjRtComputationClient::ExecuteComputation", at - 20, 30)
        python.event("PjRtCpuExecutable::ExecuteHelper", at - 15, 20)
        client.event("dot.1", at, 50, hlo_op="dot.1", hlo_module="m", program_id=program)  # inline, before the executor
        client.event("ThunkExecutor::Execute", at + 50, 20)
        client.event("ThunkExecutor::Execute (wait for completion)", at + 70, 330)
        for pool, offset in zip(pools, (80.0, 200.0)):
            pool.event("ThunkExecutor::Execute", at + offset, 100)
            pool.event("add_relu_fusion.clone", at + offset + 10, 80, hlo_op="add_relu_fusion.clone",
                       hlo_module="m", program_id=program)
    metadata = builder.plane("/host:metadata")
    for program in (5, 6):
        metadata.metadata_event(program, f"SyncTensorsGraph.9{program}({program})", **{"Hlo Proto": mlp_module(program, 8)})
    analysis = analyze(Session.load(write_session(str(tmp_path), "cpu", {"h_1": builder.to_bytes()})))
    runs = analysis.workers[0].programs
    assert runs.program.tolist() == [5, 5, 6] and runs.start_us.tolist() == [100.0, 1100.0, 2100.0]
    assert runs.dur_us.tolist() == [400.0] * 3  # from the inline dot to the end of the wait
    graphs = {g.program_id: g for g in analysis.device_profile.graphs}
    assert (graphs[5].executions, graphs[6].executions) == (2, 1)
    assert sum(g.total_us for g in graphs.values()) == pytest.approx(analysis.workers[0].busy_us) == 1200.0
    assert graphs[5].span == "train_step"


def _tpu_ops_without_program_ids() -> bytes:
    """Two devices whose op metadata names no program: each op belongs to the module run holding it."""
    builder = XSpaceBuilder()
    builder.task_environment(5000.0)
    for d in range(2):
        tpu = builder.plane(f"/device:TPU:{d}")
        modules, ops = tpu.line("XLA Modules", line_id=1), tpu.line("XLA Ops", line_id=2)
        for at, program in ((0.0, 5), (2000.0, 6), (3000.0, 5)):
            modules.event(f"SyncTensorsGraph.9{program}({program})", at + d, 1000)
            ops.event("fusion.1", at + d + 100, 300)
            ops.event("fusion.2", at + d + 150, 100)  # inside fusion.1
        ops.event("copy.1", 1500.0, 200)  # between runs: no program
    return builder.to_bytes()


def test_ops_are_placed_in_the_runs_holding_them_and_block_scans_change_nothing(tmp_path, monkeypatch):
    """The scans of event rows a block at a time (``events.SCAN_ROWS``: device busy time, op rows,
    their programs, the nesting walk) give the same analysis with blocks of 3 rows as whole."""
    from xlaprof.analysis.device import device_timeline
    from xlaprof.xspace import events

    session = write_session(str(tmp_path), "tpu", {"w_9012": _tpu_ops_without_program_ids()})
    analysis = analyze(Session.load(session))
    graphs = {g.program_id: g for g in analysis.device_profile.graphs}
    assert {p: g.executions for p, g in graphs.items()} == {5: 4, 6: 2}
    ops = {op.name: op for op in graphs[5].ops}
    assert (ops["fusion.1"].occurrences, ops["fusion.1"].total_us, ops["fusion.1"].self_us) == (4, 1200.0, 800.0)
    assert "copy.1" not in ops and ops["fusion.2"].self_us == 400.0
    whole = analysis_json(analysis)
    for module in (events, device_timeline, device_profile):
        monkeypatch.setattr(module, "SCAN_ROWS", 3)
    assert analysis_json(analyze(Session.load(session))) == whole


@pytest.mark.parametrize("block", [device_profile.SCAN_ROWS, 7])
@pytest.mark.parametrize("shuffled", [False, True])
def test_children_time_matches_a_stack_walk(block, shuffled, monkeypatch):
    """``block``: the walk scans and updates its events this many at a time (7: many blocks);
    ``shuffled``: the events out of (line, start) order, so that they are sorted first."""
    monkeypatch.setattr(device_profile, "SCAN_ROWS", block)
    rng = np.random.default_rng(3)
    line, start, dur = [], [], []
    for lane in range(3):  # properly nested trees on 3 lines
        stack_end, t = [], 0.0
        for _ in range(300):
            while stack_end and rng.random() < 0.4:
                t = max(t, stack_end.pop())
            limit = stack_end[-1] if stack_end else t + 100.0
            if limit - t < 2:
                continue
            d = float(rng.uniform(0.5, limit - t))
            line.append(lane), start.append(t + 0.1), dur.append(d - 0.1)
            stack_end.append(t + d)
            t += 0.2
    line, start, dur = np.array(line), np.array(start), np.array(dur)
    if shuffled:
        mix = rng.permutation(start.size)
        line, start, dur = line[mix], start[mix], dur[mix]
    assert device_profile._in_order(line, start, start + dur) is not shuffled
    expected = np.zeros(start.size)
    order = np.lexsort((-(start + dur), start, line))
    stack: list[int] = []
    for i in order.tolist():
        while stack and (line[stack[-1]] != line[i] or start[stack[-1]] + dur[stack[-1]] < start[i] + dur[i]):
            stack.pop()
        if stack:
            expected[stack[-1]] += dur[i]
        stack.append(i)
    assert np.allclose(_children_time(line, start, dur), expected)
    assert expected.sum() > 0
