"""Real CPU-device workloads that differ in one thing must be told apart by the analysis:
an ``.item()`` every step or none; a new shape every step or a fixed one (whose one training graph
has an op profile that agrees with xprof's; tests/integration/test_op_profile_oracle.py checks the
numbers of another capture)."""
from __future__ import annotations

import pytest

import collectors.demo_worker as demo
from tests.support.oracle import xprof_op_totals
from tests.support.workers import source_line
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.session import Session

pytestmark = pytest.mark.torch_xla


@pytest.fixture(scope="module")
def analyses(workload_sessions) -> dict[str, object]:
    return {variant: analyze(Session.load(path)) for variant, path in workload_sessions.items()}


@pytest.fixture(scope="module")
def reports(analyses) -> dict[str, dict]:
    return {variant: analysis_json(analysis) for variant, analysis in analyses.items()}


def test_reading_the_loss_every_step_is_found_and_pinned_on_its_span(reports):
    reads = reports["fixed_shapes"]
    assert reads["transfers_from_device"]["by_span"].get("log_loss", 0) >= 5
    assert reads["idle_by_cause_us"]["transfer_from_device"] > 0
    finding = next(f for f in reads["findings"] if f["kind"] == "transfer_from_device")
    # The span is the user's grouping; the line is the read itself, from the sampled stacks.
    assert finding["span"] == "log_loss" and finding["source"].endswith("demo_worker.py:" + str(source_line(demo, "losses.append(loss.item())")))
    assert finding["stack"][-1].startswith(finding["source"]) and "loss.item()" in finding["code"]
    assert "add_step_closure" in finding["advice"]


def test_no_reads_means_no_read_time_and_no_read_finding(reports):
    quiet = reports["no_reads"]
    assert quiet["transfers_from_device"]["by_span"].get("log_loss", 0) == 0
    assert quiet["idle_by_cause_us"]["transfer_from_device"] < 0.01 * reports["fixed_shapes"]["idle_by_cause_us"][
        "transfer_from_device"] + 1.0
    assert not any(f["span"] == "log_loss" for f in quiet["findings"])


def test_changing_shapes_recompile_and_fixed_shapes_do_not(reports):
    changing, fixed = reports["changing_shapes"], reports["fixed_shapes"]
    assert changing["compiles"]["count"] >= 2
    assert changing["compiles"]["recompiled_spans"].get("train_step", 0) >= 2
    assert changing["idle_by_cause_us"]["compile"] > 0.5 * changing["device_idle_us"]
    top = changing["findings"][0]
    assert top["kind"] == "recompilation" and top["span"] == "train_step"
    # joined with the worker's PT_XLA_DEBUG_FILE: torch_xla's cause and the user's line
    assert "(torch_xla: 'user torch_xla.sync' at " in top["detail"] and "demo_worker.py:" in top["detail"]
    assert fixed["compiles"]["count"] == 0 and fixed["compiles"]["recompiled_spans"] == {}
    assert fixed["idle_by_cause_us"]["compile"] == 0


def test_a_fixed_shape_worker_has_no_recompiles_and_a_whole_op_profile(analyses, reports):
    analysis, report = analyses["fixed_shapes"], reports["fixed_shapes"]
    assert report["compiles"]["count"] == 0 and report["compiles"]["explained"] == []
    assert report["compiles"]["before_window"] >= 1  # compiled while warming up, before the window
    (graph,) = [g for g in report["graphs"] if g["executions"] > 1]  # one training graph, run every step
    assert not graph["compiled_in_window"] and graph["span"] == "train_step"
    # Its ops' self time is most of its executions' time (the rest: runtime overhead between thunks).
    profile = analysis.device_profile.graph(graph["worker"], graph["program_id"])
    assert 0.5 * graph["total_us"] < profile.op_self_us <= graph["total_us"]
    ours: dict[str, float] = {}
    for g in analysis.device_profile.graphs:
        for op in g.ops:
            ours[op.name] = ours.get(op.name, 0.0) + op.total_us
    theirs = xprof_op_totals(analysis.workers[0].worker.path)
    assert set(ours) == set(theirs)
    assert all(ours[name] == pytest.approx(total, rel=0.01) for name, total in theirs.items())


def test_a_cpu_fallback_op_is_reported_with_its_transfers(reports):
    fallback, clean = reports["fallback"], reports["no_reads"]
    (metrics,) = fallback["metrics"].values()
    assert metrics["fallbacks"].get("aten::median", 0) >= 1
    finding = next(f for f in fallback["findings"] if f["kind"] == "cpu_fallback")
    assert "aten::median" in finding["detail"] and finding["count"] >= 1
    # the fallback moves its input to the host: reads appear in its span, and only there
    assert fallback["transfers_from_device"]["by_span"].get("robust_stats", 0) >= 1
    (clean_metrics,) = clean["metrics"].values()
    assert clean_metrics["fallbacks"] == {}
    assert not any(f["kind"] == "cpu_fallback" for f in clean["findings"])


def test_steps_are_broken_down_by_busy_and_idle_causes(reports):
    (steps,) = reports["fixed_shapes"]["steps"].values()
    assert len(steps) >= 5
    for step in steps:
        idle = sum(step["idle_by_cause_us"].values())
        # one device: busy + idle inside a step is the step's wall time
        assert step["busy_us"] + idle == pytest.approx(step["wall_us"], rel=1e-6, abs=0.01)
    assert [s["step"] for s in steps] == sorted(s["step"] for s in steps)

