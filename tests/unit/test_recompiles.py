"""The recompile explainer on graphs built in code, with exact truth: what changed between the
graphs of one place, said plainly, in the analysis, the JSON, the text report and the finding."""
from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from tests.support.hlo_builder import MLP_OPS, ModuleBuilder, mlp_module
from tests.support.synthetic import StepProgram, TrainingShape, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.compiles import signature_diff as diff
from xlaprof.analysis.compiles.compiles import CompileRecord
from xlaprof.analysis.device.programs import ProgramExecutions, compile_programs
from xlaprof.analysis.compiles.recompiles import ChangeKind, explain_recompiles, with_changes
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
    assert "bucket it to a few sizes (multiples of 8: 8, 16, 24)" in why.advice
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
    """The place's explanation, and its records with what changed at each compile."""
    records, hlo = _records(modules, span)
    (why,) = explain_recompiles([("w0", records, hlo)])
    return why, with_changes(records, hlo)


def test_changes_are_new_records_in_the_given_order_each_against_its_own_place():
    modules = {1: _module(1, [("f32", (8,))]), 2: _module(2, [("f32", (2, 2))]), 3: _module(3, [("f32", (9,))]),
               4: _module(4, [("f32", (3, 2))])}
    given, hlo = _records(modules, span=None)  # two families outside any span: two places, interleaved
    changed = with_changes(given, hlo)
    assert [r.program_id for r in changed] == [1, 2, 3, 4]
    assert [r.changed for r in changed] == [None, None, "input 0: f32[8] -> f32[9]", "input 0: f32[2,2] -> f32[3,2]"]
    assert [r.changed for r in given] == [None] * 4


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
                                 np.full(n, -1), np.array(starts, float), np.full(n, np.nan), np.full(n, -1),
                                 np.zeros(n, bool))

    starts, ends = np.array([0.0, 100.0, 200.0]), np.array([50.0, 150.0, 250.0])
    # Program 7 ran before any compile (compiled before the window); 9 after the second compile.
    assert compile_programs(starts, ends, executions({7: 10.0, 8: 60.0, 9: 160.0, 10: 260.0})) == [8, 9, 10]
    # The second compile's program never ran: the program run after the third compile is not its.
    linked = compile_programs(starts, ends, executions({8: 60.0, 10: 260.0}))
    assert linked == [8, None, 10]
    # Programs recorded but never run pair with unlinked compiles when their numbers agree.
    assert compile_programs(starts, ends, executions({8: 60.0, 10: 260.0}), unrun=[9]) == [8, 9, 10]
    assert compile_programs(starts, ends, executions({8: 60.0}), unrun=[9]) == [8, None, None]


def test_linking_programs_returns_new_records_and_leaves_the_given_ones():
    from xlaprof.analysis.pipeline.session_analysis import _linked_programs

    runs = ProgramExecutions(np.zeros(2, np.int32), np.array([60.0, 160.0]), np.ones(2), np.array([8, 9]),
                             np.full(2, -1), np.array([60.0, 160.0]), np.full(2, np.nan), np.full(2, -1),
                             np.zeros(2, bool))
    given = [CompileRecord(0.0, 50.0, "a", "step", None), CompileRecord(100.0, 50.0, "b", "step", None)]
    linked = _linked_programs(given, runs, HloModules({}))
    assert [r.program_id for r in linked] == [8, 9] and [r.graph_hash for r in linked] == ["a", "b"]
    assert [r.program_id for r in given] == [None, None]


def test_the_compile_summary_comes_whole_with_every_compile_and_its_worker():
    from xlaprof.analysis.compiles.compiles import summarize_compiles

    records = [CompileRecord(0.0, 5.0, "a", "step", None), CompileRecord(9.0, 5.0, "b", "step", None),
               CompileRecord(1.0, 2.0, "a", "step", None)]
    summary = summarize_compiles(records, ["w0", "w0", "w1"])
    assert summary.count == 3 and summary.recompiled_spans == {"step": 2}
    assert [(row["worker"], row["graph_hash"]) for row in summary.events] == [("w0", "a"), ("w0", "b"), ("w1", "a")]
    assert summary.events.columns == ("worker",) + tuple(f.name for f in fields(CompileRecord))


def test_words_for_sizes_buckets_and_trends():
    assert diff.buckets([8, 12, 16, 20, 24]) == [8, 16, 24]
    assert diff.buckets(list(range(21, 40))) == [24, 32, 40]
    assert diff.buckets([1, 100, 1000]) == [1024]  # 11 powers of two would keep all three graphs
    assert diff.buckets([1, 2, 3, 5, 9, 17, 33, 65, 100, 129, 257, 513, 1000]) == [1, 2, 4, 8, 16, 32, 64, 128, 256,
                                                                                512, 1024]
    assert diff.sizes_text([8, 12, 8, 16]) == "8, 12, 16"
    assert diff.sizes_text(list(range(21, 40))) == "21, 22, ..., 39 (19 sizes, growing by 1 every compile)"
    assert diff.sizes_text([0.5, 0.25]) == "0.5, 0.25"
    first = parse_module(mlp_module(1, 8), 1).signature
    assert diff.changes(first, first) == []


def _optimizer_module(program: int, batch: int, state: bool) -> bytes:
    """A step on a batch of ``batch`` rows; with ``state``, the optimizer's moment of the weight
    and its step count come in as inputs too (what AdamW adds after its first step)."""
    builder = ModuleBuilder("m", program)
    inputs = [("f32", (batch, 4)), ("f32", (4, 4))] + ([("f32", (4, 4)), ("f32", ())] if state else [])
    names = [builder.parameter(k, dtype, dims, source=f"train.py:{10 + k}") for k, (dtype, dims) in enumerate(inputs)]
    builder.op("dot.1", "dot", "f32", (batch, 4), names[:2], source="train.py:20")
    return builder.to_bytes(["dot.1"])


def test_a_first_step_state_is_a_one_off_beside_the_shape_change():
    # Step 0 (batch 16) before the optimizer's state exists, then batches 8, 24, 16 with it.
    why, records = _one({1: _optimizer_module(1, 16, False), 2: _optimizer_module(2, 8, True),
                         3: _optimizer_module(3, 24, True), 4: _optimizer_module(4, 16, True)})
    assert why.kind is ChangeKind.SHAPE and why.sizes == {"B": [8, 24, 16]}
    assert why.summary == ("1 compile: the optimizer's state was created at the first step (inputs 2 -> 4), a one-off. "
                           "3 compiles: input 0 (f32[B,4], created at train.py:10): B = 8, 24, 16.")
    assert [(c["kind"], c["compiles"], c["one_off"], c["program_ids"]) for c in why.clusters] == [
        ("inputs", 1, True, [1]), ("shape", 3, False, [2, 3, 4])]
    assert why.advice.startswith("torch_xla compiles one graph per distinct input shape") and "nothing to fix" in why.advice
    assert records[1].changed.startswith("2 -> 4 inputs")


def test_a_one_off_graph_that_is_no_state_is_said_as_such():
    modules = {1: _optimizer_module(1, 8, True), 2: _optimizer_module(2, 16, True),
               3: _module(3, [("f32", (8, 4)), ("f32", (4, 4)), ("s32", (3, 3))]), 4: _optimizer_module(4, 24, True)}
    why, _ = _one(modules)
    assert why.kind is ChangeKind.SHAPE and why.sizes == {"B": [8, 16, 24]}
    assert "1 compile: a one-off graph (3 inputs, the others 4)" in why.summary
    assert why.clusters[1]["one_off"] and why.clusters[1]["program_ids"] == [3]


def test_state_that_comes_into_being_over_the_first_steps_is_said_as_one_offs_at_the_line_that_compiled():
    # Seen on Wav2Vec2's CTC fine-tuning, no spans: the sync line compiled a graph with 112 inputs, then
    # 160 (the optimizer's moments), then 162 (its step counts), each once; the steps after reused the last.
    first = _module(1, [("f32", (8, 4)), ("f32", (4, 4))])
    moments = _module(2, [("f32", (8, 4)), ("f32", (4, 4)), ("f32", (4, 4)), ("f32", (4, 4))])
    counts = _module(3, [("f32", (8, 4)), ("f32", (4, 4)), ("f32", (4, 4)), ("f32", (4, 4)), ("f32", ())])
    records = [CompileRecord(float(k), 10.0, f"hash{k}", None, "train.py:29", program_id=k) for k in (1, 2, 3)]
    hlo = HloModules({1: ("m", first), 2: ("m", moments), 3: ("m", counts)})
    (why,) = explain_recompiles([("w0", records, hlo)])  # one place: the line, whatever the families
    assert why.kind is ChangeKind.INPUTS and why.source == "train.py:29" and why.program_ids == [1, 2, 3]
    assert why.summary == ("Each graph takes the previous one's inputs and more shaped like them (inputs 2 -> 4 -> 5), "
                           "each compiled once: state created over the first steps, one-offs.")
    assert "Nothing in the step to fix" in why.advice and "pad" not in why.advice
    # A graph that drops inputs on the way is no such growth: the family change is said as it is.
    records[2] = CompileRecord(2.0, 10.0, "hash3", None, "train.py:29", program_id=4)
    hlo = HloModules({1: ("m", first), 2: ("m", moments), 4: ("m", _module(4, [("f32", (8, 4))]))})
    (why,) = explain_recompiles([("w0", records, hlo)])
    assert "state created over the first steps" not in why.summary


def test_a_resized_input_beside_inputs_added_is_a_shape_change_not_state():
    # Seen on an LSTM tagger over padded batches of 16, then 20 tokens: the token ids (s64[8,16] ->
    # s64[8,20]) and the tags resized, and the unrolled steps' inputs added (59 -> 71 inputs), each
    # graph compiled once. Not state coming into being: the length changed, and padding fixes it.
    def tagger(program: int, length: int, steps: int) -> bytes:
        return _module(program, [("f32", (32, 32)), ("s64", (8, length)), ("s64", (8, length))]
                       + [("f32", (8, 32))] * steps)

    records = [CompileRecord(float(k), 10.0, f"hash{k}", None, "tagger.py:31", program_id=k) for k in (1, 2)]
    hlo = HloModules({1: ("m", tagger(1, 16, 3)), 2: ("m", tagger(2, 20, 5))})
    (why,) = explain_recompiles([("w0", records, hlo)])
    assert why.kind is ChangeKind.SHAPE and why.sizes == {"S": [16, 20]} and why.buckets == {"S": [24]}
    assert why.summary == ("The graphs take 6, 8 inputs, and input 1 (s64[8,S]): S = 16, 20; "
                           "input 2 (s64[8,S]): S = 16, 20 across 2 compiles.")
    assert "Nothing in the step to fix" not in why.advice and "pad S" in why.advice


def _inner_module(program: int, n: int, source: bool) -> bytes:
    """Fixed inputs (x: f32[64,4]); ``n`` enters through ``torch.arange(n)`` and ``x[:n]``."""
    line = (lambda k: f"train.py:{k}") if source else (lambda k: None)
    builder = ModuleBuilder("m", program)
    x = builder.parameter(0, "f32", (64, 4))
    builder.op("iota.1", "iota", "s32", (n,), [], source=line(31))
    builder.op("convert.1", "convert", "f32", (n,), ["iota.1"], source=line(31))
    builder.op("broadcast.1", "broadcast", "f32", (n, 4), ["convert.1"], source=line(33))
    builder.op("slice.1", "slice", "f32", (n, 4), [x], source=line(32))
    builder.op("add.1", "add", "f32", (n, 4), ["slice.1", "broadcast.1"], source=line(33))
    builder.op("reshape.1", "reshape", "f32", (4 * n,), ["add.1"], source=line(34))
    return builder.to_bytes(["reshape.1"])


def test_a_size_made_inside_the_graph_is_named_with_the_lines_that_make_it():
    why, _ = _one({k: _inner_module(k, n, source=True) for k, n in ((1, 19), (2, 20), (3, 22))})
    assert why.kind is ChangeKind.SHAPE and why.sizes == {"S": [19, 20, 22]} and why.buckets == {"S": [24]}
    assert [(i["opcode"], i["pattern"], i["source"]) for i in why.intermediates] == [
        ("iota", "s32[S]", "train.py:31"), ("slice", "f32[S,4]", "train.py:32")]
    assert why.summary == ("No input changes shape, but sizes inside the graph do: S = 19, 20, 22 across 3 compiles, "
                           "made by s32[S] by iota at train.py:31, f32[S,4] by slice at train.py:32.")
    assert "Pad S to a few sizes (pad to 24)" in why.advice
    plain, _ = _one({k: _inner_module(k, n, source=False) for k, n in ((1, 19), (2, 20), (3, 22))})
    assert plain.summary.endswith("made by s32[S] by iota (torch.arange or position ids), "
                                  "f32[S,4] by slice (a slice by a Python int).")
    assert "XLA_HLO_DEBUG=1 to name the line that makes each size" in plain.advice


def test_buckets_are_a_padding_rule_not_the_sizes_seen():
    assert diff.buckets([19, 20, 21, 22]) == [24] and diff.buckets_text([24]) == "pad to 24"
    # A rule that keeps as many graphs as sizes seen removes no compile: never the sizes seen again.
    assert diff.buckets([16, 24, 40]) == [32, 64]
    assert diff.buckets([360, 368, 376]) == [368, 384]
    assert diff.buckets([16, 24]) == [24]  # two aspect buckets: one graph, padded to the larger
    assert diff.buckets([32, 40, 48, 56]) == [32, 48, 64]
    assert diff.buckets_text([16, 24, 32, 40]) == "multiples of 8: 16, 24, 32, 40"
    assert diff.buckets(list(range(17, 60))) == [32, 48, 64]  # 8 would make 6 buckets
    assert diff.buckets_text([32, 48, 64]) == "multiples of 16: 32, 48, 64"
    assert diff.buckets_text([1, 2, 4, 8]) == "powers of two: 1, 2, 4, 8"


def test_a_size_growing_by_one_per_compile_is_told_as_a_growing_sequence():
    from xlaprof.analysis.compiles.recompiles import ADVICE, ChangeKind, _bucket_advice

    _, advice = _bucket_advice(ADVICE[ChangeKind.SHAPE], {"S": [7, 8, 9]})
    assert "grows by one at every compile" in advice and 'cache_implementation="static"' in advice
    _, advice = _bucket_advice(ADVICE[ChangeKind.SHAPE], {"B": [32, 40, 48]})
    assert "grows by one" not in advice and "multiples of 16: 32, 48" in advice


def test_counts_of_indices_from_a_data_dependent_op_are_not_padded():
    # Seen on transformers' Mixtral with eager experts: each expert's tokens found with
    # torch.where(mask), lists of [count, 2] indices whose counts follow the router.
    from xlaprof.analysis.compiles.recompiles import ADVICE_DATA_DEPENDENT_SIZES

    why, _ = _one({1: _module(1, [("f32", (64, 32)), ("s64", (29, 2)), ("s64", (30, 2))]),
                   2: _module(2, [("f32", (64, 32)), ("s64", (39, 2)), ("s64", (16, 2))])})
    assert why.kind is ChangeKind.SHAPE and why.sizes == {"B": [29, 39], "S": [30, 16]}
    assert why.advice == ADVICE_DATA_DEPENDENT_SIZES and why.buckets == {}
    assert "pad to" not in why.advice and "batched_mm" in why.advice
    # a resized batch beside them is the user's to pad: buckets as before
    why, _ = _one({1: _module(1, [("f32", (64, 32)), ("s64", (29, 2))]),
                   2: _module(2, [("f32", (72, 32)), ("s64", (39, 2))])})
    assert why.advice != ADVICE_DATA_DEPENDENT_SIZES and why.buckets
    # token ids of a varying length are not lists of indices: [batch, S] with S varying
    why, _ = _one({1: _module(1, [("s64", (2, 16))]), 2: _module(2, [("s64", (2, 24))])})
    assert why.advice != ADVICE_DATA_DEPENDENT_SIZES and why.buckets == {"S": [24]}


def test_a_last_smaller_batch_is_told_as_a_data_loaders_last_batch():
    # Seen on a classifier trained over a DataLoader of 200 samples in batches of 32 (the last 8) and
    # evaluated in batches of 32 (the last 6): each loop's last batch is a graph of its own.
    why, _ = _one({1: _module(1, [("s64", (32,)), ("f32", (32, 64)), ("f32", (256, 64))]),
                   2: _module(2, [("s64", (8,)), ("f32", (8, 64)), ("f32", (256, 64))])})
    assert why.kind is ChangeKind.SHAPE and why.sizes == {"B": [32, 8]}
    assert "pad to 32" in why.advice  # the padding rule still stands: one graph, the last batch padded
    assert "drops from 32 to 8" in why.advice and "drop_last=True" in why.advice
    assert "pad the last batch to 32 and mask the padded rows" in why.advice


@pytest.mark.parametrize("inputs_by_program", [
    # a batch that grows (a curriculum): the smaller size comes first
    {1: [("f32", (32, 64))], 2: [("f32", (40, 64))]},
    # a sequence that gets shorter: not the leading dimension
    {1: [("s64", (2, 24))], 2: [("s64", (2, 16))]},
    # the batch and the sequence change together: not a last batch alone
    {1: [("s64", (32, 24))], 2: [("s64", (8, 16))]},
    # three batch sizes: buckets, not a last batch
    {1: [("f32", (32, 64))], 2: [("f32", (24, 64))], 3: [("f32", (8, 64))]},
    # the leading dimension of one input, the second of another
    {1: [("f32", (32, 64)), ("f32", (4, 32))], 2: [("f32", (8, 64)), ("f32", (4, 8))]},
])
def test_other_size_changes_are_not_told_as_a_last_batch(inputs_by_program):
    why, _ = _one({k: _module(k, inputs) for k, inputs in inputs_by_program.items()})
    assert why.kind is ChangeKind.SHAPE and why.buckets
    assert "drop_last" not in why.advice and "last batch" not in why.advice
