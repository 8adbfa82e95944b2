"""The recompile explainer on graphs built in code, with exact truth: what changed between the
graphs of one place, said plainly, in the analysis, the JSON, the text report and the finding."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.hlo_builder import MLP_OPS, ModuleBuilder, mlp_module
from tests.support.synthetic import StepProgram, TrainingShape, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis import signature_diff as diff
from xlaprof.analysis.compiles import CompileRecord
from xlaprof.analysis.programs import ProgramExecutions, compile_programs
from xlaprof.analysis.recompiles import ChangeKind, explain_recompiles
from xlaprof.hlo import HloModules, parse_module
from xlaprof.report import analysis_json, render_text
from xlaprof.session import Session

OPS = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())


def _program(program_id: int, **module) -> StepProgram:
    return StepProgram(program_id, f"{program_id:032x}", mlp_module(program_id, **module), OPS)


def _analysis(tmp_path, programs: list[StepProgram]):
    data = training_capture(steps=len(programs), devices=2, programs=programs, shape=TrainingShape(jitter_us=0))
    return analyze(Session.load(write_session(str(tmp_path), "run", {"w0_9012": data})))


def test_a_batch_size_cycle_is_named_with_its_sizes_and_buckets(tmp_path):
    by_batch = {b: _program(100 + b, batch=b) for b in (8, 12, 16, 20, 24)}
    analysis = _analysis(tmp_path, [by_batch[b] for b in (8, 12, 16, 20, 24, 8, 12, 16)])
    (why,) = analysis.recompiles
    assert why.kind is ChangeKind.SHAPE and (why.span, why.source) == ("train_step", "train.py:30")
    assert why.summary == "Input 0 (f32[B,256], created at train.py:14): B = 8, 12, 16, 20, 24 across 5 compiles."
    assert why.sizes == {"B": [8, 12, 16, 20, 24]} and why.buckets == {"B": [8, 16, 24]}
    assert "bucket it to a few sizes (e.g. 8, 16, 24)" in why.advice
    assert why.program_ids == [108, 112, 116, 120, 124] and why.compiles == 5 and why.graphs == 5
    records = analysis.workers[0].compiles
    assert [r.program_id for r in records] == [108, 112, 116, 120, 124]
    assert [r.changed for r in records] == [None] + [f"input 0: f32[{a},256] -> f32[{b},256]"
                                                     for a, b in ((8, 12), (12, 16), (16, 20), (20, 24))]
    report = analysis_json(analysis)
    assert report["compiles"]["explained"][0]["kind"] == "shape"
    assert report["compiles"]["explained"][0]["summary"] == why.summary
    assert report["compile_events"][1]["changed"] == "input 0: f32[8,256] -> f32[12,256]"
    (finding,) = [f for f in report["findings"] if f["kind"] == "recompilation"]
    assert finding["detail"].endswith(why.summary) and finding["advice"] == why.advice
    text = render_text(analysis)
    assert "  recompiled: train_step compiled 5 different graphs\n    why: Input 0 (f32[B,256]" in text


def test_a_constant_only_recompile_points_at_special_scalars(tmp_path):
    programs = [_program(1, batch=8, threshold=0.0), _program(2, batch=8, threshold=1.0)]
    analysis = _analysis(tmp_path, programs * 2)
    (why,) = analysis.recompiles
    assert why.kind is ChangeKind.CONSTANT
    assert why.constants == [{"dtype": "f32", "values": [0.0, 1.0], "source": "train.py:16"}]
    assert why.summary == "The graphs differ only in scalar constants across 2 compiles: 0, 1 at train.py:16."
    assert "XLA_NO_SPECIAL_SCALARS=1" in why.advice and "as a device tensor" in why.advice
    assert analysis.workers[0].compiles[1].changed == "constant 0 -> 1 at train.py:16"


def test_a_loop_whose_trip_count_changes_names_the_growing_line(tmp_path):
    analysis = _analysis(tmp_path, [_program(k, batch=8, layers=k) for k in (1, 2, 3)])
    (why,) = analysis.recompiles
    assert why.kind is ChangeKind.GRAPH_SIZE and why.instruction_counts == [16, 20, 24]
    assert why.summary == ("The graphs have the same inputs and outputs, but 16, 20, 24 instructions across 3 "
                           "compiles; the difference comes from train.py:20 (+4 instructions).")
    assert "trip count" in why.advice
    assert analysis.workers[0].compiles[2].changed == "20 -> 24 instructions (+1 add, +1 fusion, +1 multiply)"


def _records(modules: dict[int, bytes], span: str | None = "step") -> tuple[list[CompileRecord], HloModules]:
    records = [CompileRecord(float(k), 10.0, f"hash{program}", span, "t.py:1" if span else None, program_id=program)
               for k, program in enumerate(modules)]
    return records, HloModules({p: ("m", data) for p, data in modules.items()})


def _one(modules: dict[int, bytes], span: str | None = "step"):
    records, hlo = _records(modules, span)
    (why,) = explain_recompiles([("w0", records, hlo)])
    return why, records


def _module(program: int, inputs: list[tuple[str, tuple]], extra: int = 0) -> bytes:
    builder = ModuleBuilder("m", program)
    names = [builder.parameter(k, dtype, dims) for k, (dtype, dims) in enumerate(inputs)]
    for k in range(extra):
        names.append(builder.op(f"neg.{k}", "negate", inputs[0][0], inputs[0][1], [names[0]]))
    return builder.to_bytes(names[-1:])


def test_dims_that_change_together_share_a_symbol():
    why, _ = _one({1: _module(1, [("f32", (8, 128)), ("s32", (8,)), ("f32", (4, 4))]),
                   2: _module(2, [("f32", (16, 128)), ("s32", (16,)), ("f32", (4, 5))])})
    assert why.kind is ChangeKind.SHAPE
    assert [(i["number"], i["pattern"], i["symbols"]) for i in why.inputs] == [
        (0, "f32[B,128]", ["B"]), (1, "s32[B]", ["B"]), (2, "f32[4,S]", ["S"])]
    assert why.sizes == {"B": [8, 16], "S": [4, 5]}
    assert "Run the worker with XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1" in why.advice  # no source lines recorded


@pytest.mark.parametrize("second,kind,phrase", [
    ([("bf16", (8, 128))], ChangeKind.DTYPE, "input 0: f32[8,128] -> bf16[8,128]"),
    ([("f32", (8, 128)), ("f32", (8, 128))], ChangeKind.INPUTS, "1 -> 2 inputs"),
    ([("f32", (8, 128, 1))], ChangeKind.INPUTS, "input 0: f32[8,128] -> f32[8,128,1]"),
])
def test_dtype_and_input_changes(second, kind, phrase):
    why, records = _one({1: _module(1, [("f32", (8, 128))]), 2: _module(2, second)})
    assert why.kind is kind and records[1].changed.startswith(phrase)


def test_identical_programs_and_missing_hlo():
    same = _module(1, [("f32", (8,))])
    why, records = _one({1: same, 2: same})
    assert why.kind is ChangeKind.NONE and records[1].changed == "the same compiled program"
    records, _ = _records({1: same, 2: same})
    (why,) = explain_recompiles([("w0", records, HloModules({}))])
    assert why.kind is ChangeKind.UNKNOWN and "holds the compiled HLO of 0 of them" in why.summary


def test_places_workers_and_families():
    modules = {1: _module(1, [("f32", (8,))]), 2: _module(2, [("f32", (9,))]), 3: _module(3, [("f32", (2, 2))])}
    # Outside any span, graphs are told apart by family: the rank-2 graph is another place.
    records, hlo = _records(modules, span=None)
    (why,) = explain_recompiles([("w0", records, hlo)])
    assert why.span == "(no span)" and why.program_ids == [1, 2]
    # The same place on two workers is one explanation with both workers' compiles.
    records0, hlo0 = _records({1: modules[1], 2: modules[2]})
    records1, hlo1 = _records({1: modules[1], 2: modules[2]})
    (both,) = explain_recompiles([("w0", records0, hlo0), ("w1", records1, hlo1)])
    assert both.workers == ["w0", "w1"] and both.compiles == 4 and both.graphs == 2
    # One graph compiled twice (a cache eviction) is no recompile.
    again = [CompileRecord(float(k), 1.0, "same", "step", None, program_id=1) for k in range(2)]
    assert explain_recompiles([("w0", again, HloModules({1: ("m", modules[1])}))]) == []


def test_compiles_link_to_the_program_first_run_after_them():
    def executions(first_runs: dict[int, float]) -> ProgramExecutions:
        programs, starts = list(first_runs), list(first_runs.values())
        n = len(programs)
        return ProgramExecutions(np.zeros(n, np.int32), np.array(starts, float), np.ones(n), np.array(programs),
                                 np.full(n, -1))

    starts, ends = np.array([0.0, 100.0, 200.0]), np.array([50.0, 150.0, 250.0])
    # Program 7 ran before any compile (compiled before the window); 9 after the second compile.
    assert compile_programs(starts, ends, executions({7: 10.0, 8: 60.0, 9: 160.0, 10: 260.0})) == [8, 9, 10]
    # The second compile's program never ran: the program run after the third compile is not its.
    linked = compile_programs(starts, ends, executions({8: 60.0, 10: 260.0}))
    assert linked == [8, None, 10]
    # Programs recorded but never run pair with unlinked compiles when their numbers agree.
    assert compile_programs(starts, ends, executions({8: 60.0, 10: 260.0}), unrun=[9]) == [8, 9, 10]
    assert compile_programs(starts, ends, executions({8: 60.0}), unrun=[9]) == [8, None, None]


def test_words_for_sizes_buckets_and_trends():
    assert diff.buckets([8, 12, 16, 20, 24]) == [8, 16, 24]
    assert diff.buckets(list(range(21, 40))) == [24, 32, 40]
    assert diff.buckets([1, 100, 1000]) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert diff.sizes_text([8, 12, 8, 16]) == "8, 12, 16"
    assert diff.sizes_text(list(range(21, 40))) == "21, 22, ..., 39 (19 sizes, growing by 1 every compile)"
    assert diff.sizes_text([0.5, 0.25]) == "0.5, 0.25"
    first = parse_module(mlp_module(1, 8), 1).signature
    assert diff.changes(first, first) == []
