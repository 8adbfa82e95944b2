"""Python stacks in the analysis, on hand-built captures whose every microsecond is known.

The scenario (us): window [0, 1000]; TPU:0 busy [0, 100] and [600, 1000], so one gap [100, 600].
The host's Python thread (line "python") runs torch_xla's own span ``xp.Trace("reporting")``
[100, 600] (no xlaprof stats), inside it a library's lookup that reads a device value: the
forced partial graph's tracing [150, 180], the barrier wait [400, 450], the transfer [450, 550].
The sampler saw the library line from 120 to 560 (one run), the training step's line around it.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.support.synthetic import PlaneBuilder, XSpaceBuilder, add_stack_samples, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.findings.advice import ADVICE_DATA_DEPENDENT, ADVICE_READ_IN_LIBRARY
from xlaprof.analysis.findings.findings import FindingKind
from xlaprof.analysis.host.frames import parse_stack
from xlaprof.analysis.host.python_stacks import StackSamples
from xlaprof.analysis.idle.attribution import CAUSES, Cause
from xlaprof.analysis.pipeline.session_analysis import _compile_at_edge
from xlaprof.report import analysis_json, render_text
from xlaprof.session import Session
from xlaprof.xspace import vocabulary

TFD = "PjRtComputationClient::TransferFromDevice"
MAIN = "/work/train.py:10 <module>\n/work/train.py:20 step"
LIBRARY_LINE = "    step_index = (self.timesteps == timestep).nonzero()\n"


@pytest.fixture
def library(tmp_path):
    """A readable library file whose line 3 reads a device value."""
    path = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "fakelib" / "sched.py"
    path.parent.mkdir(parents=True)
    path.write_text("class Scheduler:\n    def lookup(self, timestep):\n" + LIBRARY_LINE)
    return str(path)


def scenario(window_us: float = 1000.0) -> tuple[XSpaceBuilder, PlaneBuilder]:
    """The scenario's frame (see above): a builder with its window, and its host plane, where
    TPU:0 is busy [0, 100] and [600, 1000]."""
    builder = XSpaceBuilder()
    builder.task_environment(window_us)
    host = builder.plane(vocabulary.HOST_PLANE)
    modules = builder.plane("/device:TPU:0").line("XLA Modules")
    modules.event("SyncTensorsGraph.1", 0, 100)
    modules.event("SyncTensorsGraph.2", 600, 400)
    return builder, host


def capture(library: str | None, *, thread_id: int = 1, extra_stack: str = "") -> bytes:
    builder, host = scenario()
    python = host.line("python", line_id=1)
    python.event("reporting", 100, 500)  # xp.Trace: a TraceMe with no stats
    python.event("SyncTensorsGraphInternal", 150, 30)
    python.event("TensorCollectionBarrier", 400, 50)
    python.event(TFD, 450, 100)
    if library:
        stacks = {"main": MAIN, "lib": f"{MAIN}{extra_stack}\n{library}:3 lookup\n"
                  f"/venv/lib/python3.11/site-packages/torch/_tensor.py:1020 nonzero"}
        add_stack_samples(host, thread_line_id=thread_id, runs=[(0, 120, "main"), (120, 560, "lib"),
                                                                (560, 1000, "main")], stacks=stacks)
    return builder.to_bytes()


def analysed(tmp_path, data: bytes):
    return analyze(Session.load(write_session(str(tmp_path), "run", {"w_9012": data})))


def test_a_read_is_the_whole_reading_call_and_names_the_library_line(tmp_path, library):
    result = analysed(tmp_path, capture(library))
    out = analysis_json(result)
    # [100,120] the span's Python (main stack); [120,550] the reading call; [550,600] the span again.
    assert out["idle_by_cause_us"]["transfer_from_device"] == pytest.approx(430.0)
    assert out["idle_by_cause_us"]["host_tracing"] == pytest.approx(70.0)
    # The read inside the library is one finding at the user's call into it, the library line inside.
    read = next(f for f in result.findings if f.kind is FindingKind.TRANSFER_FROM_DEVICE)
    assert read.source == "/work/train.py:20" and read.span == "reporting" and read.count == 1
    assert [(line.source, line.code, line.pieces) for line in read.inside] == [
        (f"{library}:3", LIBRARY_LINE.strip(), 1)]
    assert read.stack == ("/work/train.py:10 <module>", "/work/train.py:20 step")
    # the data-dependent lookup is the library's code: fixed at the call, not "read every N steps"
    assert read.advice == ADVICE_READ_IN_LIBRARY
    assert read.detail.startswith("train.py:20 (1 blocking read(s) of device values inside sched.py, at 1 line(s) in "
                                  "reporting)")
    # Every idle microsecond has a stack here, so the lines add up to the idle time.
    lines = {(row["source"], row["cause"]): row["idle_us"] for row in out["idle_by_line"]}
    # [100,120]: the span began at 100, so the main line's run (seen until 120) is stale there:
    # the sampler saw the library line next. [550,560]: the library line's run, still open after the
    # read returned; [560,600]: the main line again (a piece is cut where the sampled run changes).
    assert lines == {(f"{library}:3", "transfer_from_device"): pytest.approx(430.0),
                     (f"{library}:3", "host_tracing"): pytest.approx(30.0),
                     ("/work/train.py:20", "host_tracing"): pytest.approx(40.0)}
    gaps = {(g["start_us"], g["cause"]): (g["source"], g["stack"][-1]) for g in out["gaps"]}
    assert gaps[(120.0, "transfer_from_device")] == (f"{library}:3", f"{library}:3 lookup")
    assert out["transfers_from_device"]["by_source"] == {f"{library}:3": 1}
    assert out["notes"] == []
    text = render_text(result)
    assert "Idle time by Python line" in text and "stack: train.py:10 <module> > train.py:20 step" in text


def test_without_stacks_the_read_is_its_runtime_chain_and_the_span_names_it(tmp_path):
    result = analysed(tmp_path, capture(None))
    out = analysis_json(result)
    # The tracing at [150,180] ends 220 us before the barrier: too far to be the read's chain.
    assert out["idle_by_cause_us"]["transfer_from_device"] == pytest.approx(150.0)
    assert out["idle_by_cause_us"]["host_tracing"] == pytest.approx(350.0)
    read = next(f for f in result.findings if f.kind is FindingKind.TRANSFER_FROM_DEVICE)
    assert read.span == "reporting" and read.source is None and read.stack == ()
    assert out["idle_by_line"] == [] and len(out["notes"]) == 1 and "w:9012" in out["notes"][0]


def test_a_sample_of_a_thread_without_its_own_line_goes_to_the_main_thread(tmp_path, library):
    result = analysed(tmp_path, capture(library, thread_id=999))
    assert result.idle_by_cause["transfer_from_device"] == pytest.approx(430.0)
    assert result.idle_by_line[0].source == f"{library}:3"


def test_read_advice_fits_a_library_lookup_a_device_index_and_a_step_closure(tmp_path, library):
    plain = parse_stack(f"{MAIN}\n{library}:3 lookup").to_source
    from xlaprof.analysis.findings.advice import ADVICE_CLOSURE, ADVICE_DEVICE_INDEX, advice_for
    assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, plain, "return self.lookup(t).item()") == ADVICE_READ_IN_LIBRARY
    # A data-dependent op or an input check in a library's code is fixed at the call; in the user's, at its line.
    for code in ("num_unique_values = len(torch.unique(t, dim=None))", "if nans.any() or nans_weight.any():"):
        assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, plain, code) == ADVICE_READ_IN_LIBRARY
    for code in ("idx = (t == x).nonzero()", "rows, cols = torch.where(mask[i])"):
        assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, ("/work/train.py:30 step",), code) == ADVICE_DATA_DEPENDENT
    # where(mask) indexed by a device scalar reads for the where, not for the index (Mixtral's experts)
    assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, plain,
                      "top_k_pos, token_idx = torch.where(expert_mask[expert_idx])") == ADVICE_READ_IN_LIBRARY
    # A table indexed with a device scalar is fixed at the call with a CPU index, in a library or not.
    for code in ("return self.table[t]", "sigma = self.sigmas[self.step_index]"):
        assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, plain, code) == ADVICE_DEVICE_INDEX
    for code in ("x = y[:, :n]", "v = out[0].item()", "step_index = candidates[pos].item()"):
        assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, plain, code) != ADVICE_DEVICE_INDEX
    closure = ("/work/train.py:10 <module>", "/venv/site-packages/torch_xla/core/xla_model.py:900 _run_step_closures",
               "/work/train.py:30 log")
    assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, closure, "print(loss.item())") == ADVICE_CLOSURE
    assert advice_for(FindingKind.TRANSFER_FROM_DEVICE, ("/work/train.py:30 log",), "loss.item()") == \
        advice_for(FindingKind.TRANSFER_FROM_DEVICE, (), None)


SITE = "/venv/lib/python3.11/site-packages"


@pytest.mark.parametrize("frame, advice", [
    ("torch/distributions/distribution.py:321 Distribution._validate_sample", "ADVICE_DISTRIBUTION_CHECK"),
    ("torch/nn/utils/clip_grad.py:60 _clip_grads_with_norm_", "ADVICE_CLIP_GRAD_CHECK"),
    ("torch_xla/_patched_functions.py:51 clip_grad_norm_", "ADVICE_CLIP_GRAD_CHECK"),  # torch_xla's, patched in
    ("torch/amp/grad_scaler.py:356 GradScaler._maybe_opt_step.<locals>.<genexpr>", "ADVICE_GRAD_SCALER_CHECK"),
    ("torch/_tensor_str.py:150 _tensor_str", None),  # print(t): the user's own read, read less often
])
def test_a_read_torchs_python_makes_under_the_users_line_is_named_and_a_check_gets_its_option(tmp_path, frame,
                                                                                                advice):
    from xlaprof.analysis.findings import advice as advices
    builder, host = scenario()
    python = host.line("python", line_id=1)
    python.event("SyncTensorsGraphInternal", 150, 30)
    python.event(TFD, 450, 100)
    stacks = {"main": MAIN, "read": f"{MAIN}\n{SITE}/{frame}"}
    add_stack_samples(host, thread_line_id=1, runs=[(0, 120, "main"), (120, 560, "read"), (560, 1000, "main")],
                      stacks=stacks)
    out = analysis_json(analysed(tmp_path, builder.to_bytes()))
    read = next(f for f in out["findings"] if f["kind"] == "transfer_from_device")
    assert read["source"] == "/work/train.py:20" and read["stack"][-1] == "/work/train.py:20 step"
    location, function = frame.split(" ")
    package = location.split("/")[0]
    assert f"in {package}'s {location.rsplit('/', 1)[-1]} {function}" in read["detail"], read["detail"]
    expected = getattr(advices, advice) if advice else advices.ADVICE[FindingKind.TRANSFER_FROM_DEVICE]
    assert read["advice"] == expected


def test_a_torch_frame_is_one_below_the_users_line_and_not_the_autograd_engines_wait():
    distributions = f"{SITE}/torch/distributions/distribution.py:76 Distribution.__init__"
    assert parse_stack(f"{MAIN}\n{distributions}").torch_frame.label == distributions
    assert parse_stack(MAIN).torch_frame is None  # the read is the user's line's own (.item())
    assert parse_stack(f"{MAIN}\n{SITE}/torch/autograd/graph.py:824 _engine_run_backward").torch_frame is None
    assert parse_stack(f"{SITE}/torch/_tensor.py:10 item").torch_frame is None  # no user line above it


def test_frames_name_the_users_line_outside_the_framework():
    stack = parse_stack("/a b/train.py:42 main\n/v/lib/python3.11/site-packages/diffusers/s.py:659 step\n"
                        "/v/lib/python3.11/site-packages/torch/_tensor.py:10 item\n<frozen runpy>:88 _run_code")
    assert stack.source == "/v/lib/python3.11/site-packages/diffusers/s.py:659"
    assert stack.caller == "/a b/train.py:42"  # a path with a space survives
    assert stack.to_source[-1].endswith("s.py:659 step") and len(stack.to_source) == 2
    assert parse_stack("not a frame").source is None


def test_a_compile_running_at_capture_start_is_a_compile(tmp_path):
    builder = XSpaceBuilder()
    builder.task_environment(1000.0)
    host = builder.plane(vocabulary.HOST_PLANE)
    host.line("python", line_id=1).event("StepMarker", 310, 10)
    metrics = host.line("xlaprof-metrics", line_id=2)
    metrics.event(vocabulary.METRICS_EVENT, 5, 1, **{"CompileTime.count": 4})
    metrics.event(vocabulary.METRICS_EVENT, 900, 1, **{"CompileTime.count": 5})
    builder.plane("/device:TPU:0").line("XLA Modules").event("SyncTensorsGraph.1", 300, 700)
    out = analysis_json(analysed(tmp_path, builder.to_bytes()))
    # [0,300]: no host event, but the metrics counted a compile the capture did not record.
    assert out["idle_by_cause_us"]["compile"] == pytest.approx(300.0)
    assert [(e["cause"], e["start_us"]) for e in out["compile_events"]] == [
        ("already compiling when the capture started", 0.0)]
    assert not any(f["kind"] == "capture_edge" for f in out["findings"])
    # The compile's time is charged in new pieces; the pieces given are left as they are.
    w = analysed(tmp_path / "again", builder.to_bytes()).workers[0]
    given = replace(w.pieces, cause=np.full(len(w.pieces), CAUSES.index(Cause.UNATTRIBUTED), np.int8))
    records, charged = _compile_at_edge(given, w.window, w.host, w.metrics, 0)
    assert [r.cause for r in records] == ["already compiling when the capture started"]
    assert (given.cause == CAUSES.index(Cause.UNATTRIBUTED)).all()
    assert (charged.cause[given.start_us < 300] == CAUSES.index(Cause.COMPILE)).all()


def test_the_line_table_adds_up_to_the_idle_time_that_has_a_stack(tmp_path):
    result = analysed(tmp_path, training_capture(steps=8, devices=1, read_every=2, sampled=True))
    w = result.workers[0]
    with_stack = float(w.pieces.dur_us[w.pieces.stack >= 0].sum())
    assert with_stack > 0
    assert sum(row.idle_us for row in result.idle_by_line) == pytest.approx(with_stack)
    read = next(f for f in result.findings if f.kind is FindingKind.TRANSFER_FROM_DEVICE)
    assert read.source == "train.py:57" and read.stack[-1] == "train.py:57 log_loss" and read.count == 4


def test_the_compilers_passes_are_no_user_spans_and_an_orphan_compile_is_a_compile(tmp_path):
    builder = XSpaceBuilder()
    builder.task_environment(1000.0)
    python = builder.plane(vocabulary.HOST_PLANE).line("python", line_id=1)
    python.event("Codegen", 0, 200)  # a compile begun before the capture: its passes, no compile event
    python.event("dce", 10, 40)
    python.event("fusion", 60, 30)  # a pass the vocabulary does not list, inside the orphan compile
    python.event("reporting", 300, 150)  # xp.Trace
    python.event("XLAGraphExecutor::Compile", 500, 100, graph_hash="h1")
    python.event("RunInvariantCheckers", 510, 20)
    python.event("while-loop-simplifier", 540, 20)
    python.event(TFD, 700, 50)
    builder.plane("/device:TPU:0").line("XLA Modules").event("SyncTensorsGraph.1", 800, 150)
    result = analysed(tmp_path, builder.to_bytes())
    assert result.workers[0].host.spans.name == ["reporting"]
    edge = [r for r in result.workers[0].compiles if r.cause == "already compiling when the capture started"]
    assert [(r.start_us, r.dur_us) for r in edge] == [(0.0, 200.0)]
    # [0,200] the orphan compile, [500,600] the recorded one; the rest of [0,800] as before.
    assert result.idle_by_cause["compile"] == pytest.approx(300.0)


def test_sampled_host_time_is_tracing_when_running_or_waiting_in_torch_and_blocked_elsewhere(tmp_path):
    """No torch_xla event covers the gap [100, 600]; the training thread's sampled runs do: blocked
    inside torch (the autograd engine's wait, 5% of the time on a CPU) [100, 250], blocked at its own
    loader's line [250, 450] (2%: the thread ran on after the call returned), running Python [450, 600]."""
    builder, host = scenario()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", 20, 60)
    stacks = {"main": MAIN, "sleep": f"{MAIN}\n/work/loader.py:7 next_batch",
              "backward": f"{MAIN}\n/venv/lib/python3.11/site-packages/torch/autograd/graph.py:841 _engine_run_backward",
              "forward": f"{MAIN}\n/work/model.py:5 forward"}
    add_stack_samples(host, thread_line_id=1, stacks=stacks,
                      runs=[(0, 100, "main"), (100, 250, "backward"), (250, 450, "sleep"), (450, 600, "forward"),
                            (600, 1000, "main")],
                      cpu_share={"main": 1.0, "sleep": 0.02, "backward": 0.05, "forward": 1.0})
    out = analysis_json(analysed(tmp_path, builder.to_bytes()))
    assert out["idle_by_cause_us"]["host_blocked"] == pytest.approx(200.0 * 0.98)
    assert out["idle_by_cause_us"]["host_tracing"] == pytest.approx(300.0 + 200.0 * 0.02)
    assert out["idle_by_cause_us"]["unattributed"] == pytest.approx(0.0)
    blocked = next(f for f in out["findings"] if f["kind"] == "host_blocked")
    assert blocked["source"] == "/work/loader.py:7" and "DataLoader" in blocked["advice"]
    lines = {(row["source"], row["cause"]) for row in out["idle_by_line"]}
    assert ("/work/train.py:20", "host_tracing") in lines and ("/work/model.py:5", "host_tracing") in lines


def test_python_inside_a_dataloader_fetching_on_the_training_thread_is_advised_workers_not_compile(tmp_path):
    """The training thread runs Python in the gap [100, 600]: its DataLoader (num_workers=0) collating
    a batch [100, 400] (the stack's innermost user line is the loop's, the collate below it torch's),
    then the model's forward [400, 600]. The loader's time is the batch prepared on this thread:
    worker processes and a prefetching loader fix it; the forward keeps the tracing advice."""
    builder, host = scenario()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", 20, 60)
    torch_data = "/venv/lib/python3.11/site-packages/torch/utils/data"
    stacks = {"main": MAIN,
              "collate": f"{MAIN}\n{torch_data}/dataloader.py:733 _BaseDataLoaderIter.__next__\n"
                         f"{torch_data}/dataloader.py:789 _SingleProcessDataLoaderIter._next_data\n"
                         f"{torch_data}/_utils/collate.py:272 collate_tensor_fn",
              "forward": f"{MAIN}\n/work/model.py:5 forward"}
    add_stack_samples(host, thread_line_id=1, stacks=stacks,
                      runs=[(0, 100, "main"), (100, 400, "collate"), (400, 600, "forward"), (600, 1000, "main")])
    out = analysis_json(analysed(tmp_path, builder.to_bytes()))
    by_source = {f["source"]: f for f in out["findings"] if f["kind"] == "host_tracing"}
    loading, forward = by_source["/work/train.py:20"], by_source["/work/model.py:5"]
    assert loading["lost_us"] == pytest.approx(300.0) and "preparing a batch in the DataLoader" in loading["detail"]
    assert "num_workers" in loading["advice"] and "torch_xla.compile" not in loading["advice"]
    assert "torch_xla.compile" in forward["advice"] and "num_workers" not in forward["advice"]
    # A loader with worker processes only receives their batches on this thread: no such advice.
    assert not parse_stack(stacks["collate"].replace("_SingleProcessDataLoaderIter", "_MultiProcessingDataLoaderIter")
                           ).in_data_loader


def test_torchdynamo_compiling_a_frame_is_compile_at_the_users_call(tmp_path):
    """The gap [100, 600]: the training thread runs Python [100, 250] (its forward), then TorchDynamo
    compiles the frame it called [250, 600] (``torch.compile``: Python on a CPU, in its frame
    compiler), no torch_xla compile event: the second part is compile, at the user's call."""
    builder, host = scenario()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", 20, 60)
    dynamo = (f"{MAIN}\n/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py:832 compile_wrapper\n"
              "/venv/lib/python3.11/site-packages/torch/_dynamo/convert_frame.py:1272 __call__\n"
              "/venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py:1100 step")
    stacks = {"main": MAIN, "forward": f"{MAIN}\n/work/model.py:5 forward", "dynamo": dynamo}
    add_stack_samples(host, thread_line_id=1, stacks=stacks,
                      runs=[(0, 100, "main"), (100, 250, "forward"), (250, 600, "dynamo"), (600, 1000, "main")],
                      cpu_share={"main": 1.0, "forward": 1.0, "dynamo": 1.0})
    out = analysis_json(analysed(tmp_path, builder.to_bytes()))
    assert out["idle_by_cause_us"]["compile"] == pytest.approx(350.0)
    assert out["idle_by_cause_us"]["host_tracing"] == pytest.approx(150.0)
    assert {(row["source"], row["cause"]) for row in out["idle_by_line"]} >= {("/work/train.py:20", "compile"),
                                                                           ("/work/model.py:5", "host_tracing")}


def _marked_read_capture(library: str, *, sampled: str, synced_until: float | None = None) -> bytes:
    """``capture``'s read, its call marked by the reading op [390, 555] (collectors/read_calls.py).
    ``sampled``: "none" (no sampler), "neighbour" (the sampler saw only the training step's line: it
    slept through the read) or "line" (it saw the reading line from 300 on, inside torch's Python:
    the statement that reads began there). ``synced_until``: an explicit sync on the thread ends then."""
    builder, host = scenario()
    python = host.line("python", line_id=1)
    python.event("reporting", 100, 500)
    if synced_until is not None:
        python.event("StepMarker", synced_until - 40, 40)
    python.event("TensorCollectionBarrier", 400, 50)
    marked = f"{MAIN}\n{library}:3 lookup"
    python.event(vocabulary.READ_CALL_EVENT, 390, 165, **{vocabulary.PY_READ_STACK_STAT: marked})
    python.event(TFD, 450, 100)
    stacks = {"main": MAIN, "line": f"{marked}\n/venv/lib/python3.11/site-packages/torch/_tensor.py:40 __eq__"}
    if sampled == "neighbour":
        add_stack_samples(host, thread_line_id=1, runs=[(0, 1000, "main")], stacks=stacks)
    elif sampled == "line":
        add_stack_samples(host, thread_line_id=1, runs=[(0, 300, "main"), (300, 1000, "line")], stacks=stacks)
    return builder.to_bytes()


@pytest.mark.parametrize("sampled, began", [("neighbour", 390.0), ("none", 390.0), ("line", 300.0)])
def test_a_read_whose_call_the_op_marked_is_at_the_marked_line_from_the_lines_start(tmp_path, library, sampled,
                                                                                     began):
    out = analysis_json(analysed(tmp_path, _marked_read_capture(library, sampled=sampled)))
    # Not the sampled neighbour (train.py:20): the line the reading op was called from.
    assert out["transfers_from_device"]["by_source"] == {f"{library}:3": 1}
    read = next(g for g in out["gaps"] if g["cause"] == "transfer_from_device")
    # The read is the marked call [390, 555] (past the transfer's end, 550: the op's return), or from
    # where the sampler saw its line begin (300).
    assert (read["start_us"], read["source"], read["stack"][-1]) == (began, f"{library}:3", f"{library}:3 lookup")
    assert out["idle_by_cause_us"]["transfer_from_device"] == pytest.approx(555.0 - began)
    if sampled == "neighbour":  # the marked call is a reading stack: a sampled run is never taken for the read
        assert ("/work/train.py:20", "transfer_from_device") not in {(r["source"], r["cause"])
                                                                    for r in out["idle_by_line"]}


def test_a_marked_reads_call_never_reaches_back_over_a_sync_on_its_thread(tmp_path, library):
    """A step closure's read: the sampler, kept off the GIL by the sync, first saw the closure's line
    late and placed its run from 300 on, where the thread was still in the sync (ending at 340): the
    read's call begins after the sync, not with the sampled run."""
    out = analysis_json(analysed(tmp_path, _marked_read_capture(library, sampled="line", synced_until=340.0)))
    read = next(g for g in out["gaps"] if g["cause"] == "transfer_from_device")
    assert (read["start_us"], read["source"]) == (340.0, f"{library}:3")


def test_a_sampled_threads_window_ends_at_its_last_sample_not_at_bookkeeping_recorded_after_it(tmp_path):
    # The sampler's run open at the capture's stop is dropped, while the main thread's threadpool
    # bookkeeping (instants) goes on being recorded: the window ends with the last sample (1000).
    builder, host = scenario(window_us=2000.0)
    python = host.line("python", line_id=1)
    python.event("SyncTensorsGraphInternal", 550, 40)
    python.event("ThreadpoolListener::Record", 1900, 0)
    add_stack_samples(host, thread_line_id=1, runs=[(0, 1000, "main")], stacks={"main": MAIN})
    out = analysis_json(analysed(tmp_path, builder.to_bytes()))
    assert out["window_us"] == pytest.approx(1000.0)
    assert out["device_idle_us"] == pytest.approx(500.0) and out["idle_by_cause_us"]["unattributed"] == 0


def test_a_compile_longer_than_the_samplers_lag_takes_the_run_holding_it_though_the_thread_moved_on(tmp_path):
    # Seen in a real capture: the sampler, kept off the GIL through a step's 2 ms of Python, made one
    # run of two steps' syncs at the same line; the second step's 37 ms compile lay inside that run,
    # after the first sync returned (the thread moved on), and lost its line.
    builder, host = scenario(window_us=10_000.0)
    python = host.line("python", line_id=1)
    python.event("StepMarker", 100, 400)  # the first step's sync, returned at 500
    python.event("XLAGraphExecutor::Compile", 1000, 7000, graph_hash="h2")  # the second's, 7 ms
    python.event(TFD, 9000, 50)  # a short read in the same run: still not seen (no line)
    stacks = {"sync": f"{MAIN}\n/work/train.py:30 train"}
    add_stack_samples(host, thread_line_id=1, runs=[(0, 9500, "sync")], stacks=stacks)
    result = analysed(tmp_path, builder.to_bytes())
    (compile_record,) = result.workers[0].compiles
    assert compile_record.source == "/work/train.py:30"
    assert analysis_json(result)["transfers_from_device"]["by_source"] == {}


def test_a_frame_at_its_def_line_stands_for_its_callers_line(tmp_path):
    """The sampler caught a call being made (the callee at its ``def``): the line is the caller's."""
    lib = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "lib" / "utils.py"
    lib.parent.mkdir(parents=True)
    lib.write_text("import torch\n\ndef is_capturing() -> bool:\n    return False\n")
    stack = parse_stack(f"/work/train.py:10 <module>\n{lib}:2 generate\n{lib}:3 is_capturing")
    assert stack.source == f"{lib}:2"
    assert parse_stack(f"/work/train.py:10 <module>\n{lib}:4 is_capturing").source == f"{lib}:4"


def test_a_compiled_frame_at_its_decorator_line_stands_for_its_callers_line(tmp_path):
    """TorchDynamo's compiled frame runs its graph at its function's first line: the decorator's."""
    script = tmp_path / "infer.py"
    script.write_text("import torch\n\n@torch.compile(backend='openxla')\ndef classify(x):\n    return x\n\n"
                      "label = classify(x).item()\n")
    dynamo = "/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py:832 compile_wrapper"
    stack = parse_stack(f"{script}:7 <module>\n{dynamo}\n{script}:3 classify\n{dynamo}")
    assert stack.source == f"{script}:7"


def test_a_library_line_under_a_compiled_frame_is_fixed_at_the_frames_caller_not_its_decorator(tmp_path):
    """Seen in CI: TorchDynamo's guards ran sympy (a library) under the compiled frame, which stands at
    its decorator line; the user's call site is the caller's line, as is a library line's caller."""
    script = tmp_path / "infer.py"
    script.write_text("import torch\n\n@torch.compile(backend='openxla')\ndef classify(x):\n    return x\n\n"
                      "label = classify(x).item()\n")
    dynamo = "/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py:832 compile_wrapper"
    sympy = "/venv/lib/python3.11/site-packages/sympy/core/basic.py:300 Basic.__eq__"
    stack = parse_stack(f"{script}:7 <module>\n{dynamo}\n{script}:3 classify\n{dynamo}\n{sympy}")
    assert stack.source == "/venv/lib/python3.11/site-packages/sympy/core/basic.py:300"
    assert stack.frames[stack.call_site_index].location == f"{script}:7"
    assert stack.caller == f"{script}:7"


def test_xlaprofs_own_worker_modules_are_never_the_users_line():
    for own in ("stack_runs.py", "read_calls.py", "worker_protocol.py", "torch_xla_import.py"):
        stack = parse_stack(f"/work/train.py:10 <module>\n/src/xlaprof-repo/collectors/{own}:114 sample")
        assert stack.source == "/work/train.py:10", own
    assert parse_stack("/src/collectors/demo_worker.py:65 train").source == "/src/collectors/demo_worker.py:65"


def test_which_stacks_wait_for_another_thread_is_one_array_per_samples():
    queue_get = f"{MAIN}\n/usr/lib/python3.11/queue.py:180 get"
    line = np.zeros(2, np.int32)
    samples = StackSamples([parse_stack(MAIN), parse_stack(queue_get)], line, np.array([0.0, 5.0]),
                           np.array([5.0, 9.0]), np.array([0, 1]))
    assert samples.waiting.tolist() == [False, True, False]  # the last: no stack (-1)
    assert samples.waiting is samples.waiting
