"""The JSON contract does not move: every key frozen before the architecture change is still
in ``xlaprof analyze --json`` (more keys are welcome), on a synthetic pod that exercises them all
but the worker metrics (the integration tests check those on a real capture)."""
from __future__ import annotations

import json

from tests.support.contract import CONTRACT_KEYS, key_paths
from tests.support.debug_samples import TEXT, debug_block
from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.synthetic import StepProgram, TrainingShape, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.session import Session

NEEDS_METRICS = {k for k in CONTRACT_KEYS if k.startswith("metrics.")}


def test_every_contract_key_is_in_the_report(tmp_path):
    ops = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
    programs = [StepProgram(k, f"{k:032x}", mlp_module(k, 8 * k), ops) for k in (1, 2, 3) for _ in range(10)]
    run = write_session(str(tmp_path), "pod", {
        "w0_9012": training_capture(steps=30, devices=2, read_every=1, programs=programs, sampled=True),
        "w1_9012": training_capture(steps=30, devices=2, read_every=2, shape=TrainingShape(module_us=4000.0))})
    first_graph = debug_block("Compilation", "user torch_xla.sync", f"{1:032x}", ["step (/work/train.py:7)"])
    (tmp_path / "plugins" / "profile" / "pod" / "w0_9012.pt_xla_debug.txt").write_text(TEXT + first_graph)
    report = analysis_json(analyze(Session.load(run)))
    assert report["stragglers"] and report["execution_causes"] and report["compiles"]["trigger_by_span"]
    assert report["compiles"]["explained"] and report["graphs"][0]["ops"]
    assert report["idle_by_line"] and report["notes"]  # w0 has stacks, w1 none
    assert CONTRACT_KEYS - NEEDS_METRICS <= key_paths(json.loads(json.dumps(report)))


def test_key_paths_see_a_missing_key():
    report = {"compiles": {"count": 1, "by_span": {"train_step": 1}}, "gaps": [{"cause": "compile"}]}
    assert key_paths(report) == {"compiles", "compiles.count", "compiles.by_span", "compiles.by_span.*",
                                 "gaps", "gaps[].cause"}
    assert not CONTRACT_KEYS <= key_paths(report)
