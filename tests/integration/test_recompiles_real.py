"""Recompiles of real third-party code captured from step 0, explained right, and one execution per
program run: transformers' GPT-2 trained with AdamW on sequence lengths that cycle (the optimizer
creates its state at the first step, a one-off that must not hide the length), and a length made
on the device from a Python int (``torch.arange(n, device=d)``, ``torch.randn(b, n, d,
device=d)``, ``x[:, :n]``: the graph's inputs never change). The truth is what the worker script
chose (its lengths) and torch_xla's own ``CompileTime`` and ``ExecuteTime`` counts over the
captured steps (tests/support/workloads/recompile_worker.py)."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.support.workers import run_python, source_line
from tests.support.workloads import recompile_worker
from xlaprof.analysis import analyze
from xlaprof.analysis.compiles.signature_diff import buckets_text
from xlaprof.report import analysis_json
from xlaprof.session import Session

pytestmark = pytest.mark.torch_xla


@pytest.fixture(scope="session")
def recompile_runs(tmp_path_factory) -> dict[str, dict]:
    """{workload: its truth, with "report" (the analysis JSON) and "busy_us" (the worker's)}."""
    logdir = str(tmp_path_factory.mktemp("recompiles") / "logs")
    result = run_python(f"from tests.support.workloads.recompile_worker import main; main([{logdir!r}])",
                        env={"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    runs = json.loads(result.stdout.strip().splitlines()[-1])
    for run in runs.values():
        analysis = analyze(Session.load(run["path"]))
        run["report"] = analysis_json(analysis)
        run["busy_us"] = analysis.workers[0].busy_us
    return runs


def test_gpt2_from_step_0_names_the_length_beside_the_optimizer_state(recompile_runs):
    run = recompile_runs["gpt2"]
    compiles = run["report"]["compiles"]
    assert compiles["count"] == run["CompileTime"] == len(recompile_worker.GPT2_LENGTHS) + 1
    (why,) = compiles["explained"]
    assert why["kind"] == "shape" and why["compiles"] == run["CompileTime"]
    state, lengths = why["clusters"]
    assert state["one_off"] and state["compiles"] == 1 and state["kind"] == "inputs"
    assert state["summary"].startswith("1 compile: the optimizer's state was created at the first step (inputs ")
    # The other compiles: one per length, named by the lengths the script chose, in compile order.
    chosen = list(dict.fromkeys(run["lengths"][1:] + run["lengths"][:1]))
    assert lengths["kind"] == "shape" and lengths["compiles"] == len(chosen)
    assert why["sizes"] == {"S": chosen}
    (ids,) = [i for i in why["inputs"] if i["symbols"] == ["S"] and i["pattern"].startswith("s64[")]
    assert ids["source"].endswith(f"recompile_worker.py:{source_line(recompile_worker, 'ids = torch.randint')}")
    assert f"S = {', '.join(map(str, chosen))}" in lengths["summary"] and lengths["summary"] in why["summary"]
    # Buckets: a padding rule that covers the lengths with fewer graphs, not the lengths themselves.
    (buckets,) = why["buckets"].values()
    assert buckets != sorted(chosen) and all(b % 8 == 0 for b in buckets) and len(buckets) < len(chosen)
    assert all(any(b >= n for b in buckets) for n in chosen)
    assert buckets_text(buckets) in why["advice"] and "nothing to fix" in why["advice"]


def test_a_length_made_on_the_device_is_a_shape_change_inside_the_graph(recompile_runs):
    run = recompile_runs["device_length"]
    compiles = run["report"]["compiles"]
    assert compiles["count"] == run["CompileTime"] == len(recompile_worker.DEVICE_LENGTHS)
    (why,) = compiles["explained"]
    assert why["kind"] == "shape" and why["inputs"] == [] and not why["clusters"]
    assert why["sizes"] == {"S": list(dict.fromkeys(run["lengths"]))}
    lines = {i["source"].rsplit(":", 1)[1] for i in why["intermediates"] if i["source"]}
    made = {str(source_line(recompile_worker, f"# the {what} line")) for what in ("positions", "noise")}
    assert made <= lines, why["intermediates"]
    assert why["summary"].startswith("No input changes shape, but sizes inside the graph do: S = 20, 28, 36")
    assert "instructions" not in why["summary"] and "loop" not in why["advice"]


@pytest.mark.parametrize("workload", ["gpt2", "device_length"])
def test_one_execution_per_program_run(recompile_runs, workload):
    """Per graph, as many executions as steps ran it (one graph per step); in all, torch_xla's
    ExecuteTime count over the window; and the graphs' device time is the busy time."""
    run = recompile_runs[workload]
    report = run["report"]
    (metrics,) = report["metrics"].values()
    assert run["ExecuteTime"] == recompile_worker.STEPS
    # The capture's own metrics count the executions finished by its last snapshot, taken as the
    # last step ends (no device sync in instrumentation). Without the workload's wait for the device
    # in its last step, that step's execution could still run then (about half the runs) and, once,
    # even as the session stopped: the trace lacked it too (5 of 6).
    assert metrics["delta"]["ExecuteTime.count"] in (run["ExecuteTime"] - 1, run["ExecuteTime"])
    executions = {g["program_id"]: g["executions"] for g in report["graphs"]}
    assert sum(executions.values()) == run["ExecuteTime"]
    (why,) = report["compiles"]["explained"]
    steps_per_length = Counter(run["lengths"])
    expected = {}
    for cluster in why["clusters"] or [{"program_ids": why["program_ids"], "one_off": False}]:
        if cluster["one_off"]:  # GPT-2's first step, before AdamW's state existed
            (program,) = cluster["program_ids"]
            expected[program] = 1
            steps_per_length[run["lengths"][0]] -= 1
        else:
            expected.update({p: steps_per_length[n] for p, n in zip(cluster["program_ids"], why["sizes"]["S"])})
    assert executions == expected
    assert sum(g["total_us"] for g in report["graphs"]) == pytest.approx(run["busy_us"], rel=1e-6)
