"""``xlaprof analyze`` in a subprocess on captures carrying compiled HLO: the explanation in the
JSON and the text, and a capture whose HLO records are corrupt (still analysed, exit 0)."""
from __future__ import annotations

import json

from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.synthetic import StepProgram, training_capture, write_session
from tests.support.workers import run_cli

OPS = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())


def test_analyze_explains_a_recompile_in_json_and_text(tmp_path):
    programs = [StepProgram(k, f"{k:032x}", mlp_module(k, batch=8, layers=k), OPS) for k in (1, 2, 3, 1)]
    run = write_session(str(tmp_path), "loop", {"localhost_9012": training_capture(steps=4, devices=1,
                                                                                   programs=programs)})
    result = run_cli("analyze", run, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (why,) = report["compiles"]["explained"]
    assert why["kind"] == "graph_size" and why["instruction_counts"] == [16, 20, 24] and why["program_ids"] == [1, 2, 3]
    assert [e["program_id"] for e in report["compile_events"]] == [1, 2, 3]
    assert {g["program_id"]: g["executions"] for g in report["graphs"]} == {1: 2, 2: 1, 3: 1}
    text = run_cli("analyze", run)
    assert text.returncode == 0 and text.stderr == ""
    flat = " ".join(text.stdout.split())
    assert "why: The graphs have the same inputs and outputs, but 16, 20, 24 instructions" in flat
    assert "Device time by graph" in flat and "Device time by Python line" in flat


def test_corrupt_hlo_records_do_not_fail_the_analysis(tmp_path):
    programs = [StepProgram(k, f"{k:032x}", b"\x0a\x07\x0a\x05garbage", OPS) for k in (1, 2)]
    run = write_session(str(tmp_path), "bad", {"localhost_9012": training_capture(steps=2, devices=1,
                                                                                  programs=programs)})
    result = run_cli("analyze", run, "--json")
    assert result.returncode == 0 and result.stderr == ""
    (why,) = json.loads(result.stdout)["compiles"]["explained"]
    assert why["kind"] == "unknown" and "holds the compiled HLO of 0 of them" in why["summary"]
