"""The HLO reader: wire compatibility with XLA's field numbers, the entry signature, instruction
lookup and text, source lines from stack frames, and bad records that never fail an analysis."""
from __future__ import annotations

import pytest

from tests.support.hlo_builder import ModuleBuilder, mlp_module
from tests.support.synthetic import StepProgram, TrainingShape, XSpaceBuilder, training_capture, varint, write_session
from xlaprof.analysis import analyze
from xlaprof.framework_files import is_framework_file
from xlaprof.hlo import HloDecodeError, hlo_modules, module_name, parse_module, program_of
from xlaprof.hlo.source import Frames
from xlaprof.hlo.text import instruction_text
from xlaprof.session import Session
from xlaprof.xspace import schema as xspace_schema
from xlaprof.xspace.reader import read_xspace


def _field(number: int, value) -> bytes:
    """One protobuf field, hand-encoded: an int as a varint, bytes/str as length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def test_field_numbers_are_xlas():
    """An HloProto encoded by hand with the field numbers of XLA's hlo.proto and xla_data.proto
    (not with our schema) reads back: the numbers, not our names, are the contract."""
    shape = _field(2, 11) + _field(3, 8) + _field(3, 256)  # ShapeProto: element_type F32, dims 8, 256
    parameter = _field(1, "p0.1") + _field(2, "parameter") + _field(3, shape) + _field(9, 0) + _field(35, 1)
    metadata = _field(1, "aten__add") + _field(3, "train.py") + _field(4, 12)  # OpMetadata
    scalar = _field(2, 11)
    literal = _field(1, scalar) + _field(8, b"\x00\x00\x80\x3f")  # LiteralProto f32s packed: 1.0
    constant = _field(1, "c.2") + _field(2, "constant") + _field(3, scalar) + _field(7, metadata) \
        + _field(8, literal) + _field(35, 2)
    add = _field(1, "add.3") + _field(2, "add") + _field(3, shape) + _field(35, 3) + _field(36, b"\x01\x02")
    computation = _field(1, "main") + _field(2, parameter) + _field(2, constant) + _field(2, add) \
        + _field(5, 7) + _field(6, 3)
    module = _field(1, "SyncTensorsGraph.9") + _field(3, computation) + _field(5, 42) + _field(6, 7)
    data = _field(1, module) + _field(3, b"\x0a\x00")  # and a buffer assignment we do not declare
    parsed = parse_module(data, 42)
    signature = parsed.signature
    assert parsed.name == "SyncTensorsGraph.9" and parsed.proto.id == 42
    assert [p.text for p in signature.parameters] == ["f32[8,256]"]
    assert [r.text for r in signature.results] == ["f32[8,256]"]  # the root's shape
    assert signature.instruction_count == 3 and signature.opcodes == {"parameter": 1, "constant": 1, "add": 1}
    assert [(c.dtype, c.value, c.source) for c in signature.constants] == [("f32", 1.0, "train.py:12")]
    assert list(parsed.instruction("add.3").proto.operand_ids) == [1, 2]


def test_signature_of_a_built_module():
    module = parse_module(mlp_module(7, 16, threshold=0.25, layers=2), 7)
    signature = module.signature
    assert [p.text for p in signature.parameters] == ["f32[16,256]", "f32[256,64]", "f32[64,1]"]
    assert signature.parameter_sources == ("train.py:14", "train.py:15", "train.py:15")
    assert [r.text for r in signature.results] == ["f32[]", "f32[256,64]"]
    assert [(c.value, c.source) for c in signature.constants] == [(0.25, "train.py:16")]
    assert signature.family == ((2, 2, 2), (0, 2))
    assert signature.sources["train.py:20"] == 2  # the second layer's fused multiply and add


def test_instructions_by_name_category_source_and_stack():
    module = parse_module(mlp_module(3, 8), 3)
    fusion = module.instruction("add_relu_fusion")
    assert (fusion.opcode, fusion.category, fusion.shape.text) == ("fusion", "loop fusion", "f32[8,64]")
    # A fusion without its own metadata takes its fused root's: the user frame, not torch's.
    assert fusion.source == "train.py:15"
    assert fusion.stack[0] == "train.py:7 <module>" and fusion.stack[1] == "train.py:15 step"
    assert fusion.stack[-1].startswith("/venv/lib/python3.11/site-packages/torch/nn/functional.py:1697")
    assert module.instruction("add_relu_fusion.clone").name == "add_relu_fusion"  # XLA:CPU's copies
    assert module.instruction("reduce_fusion").category == "input fusion"
    assert module.instruction("copy.1").source is None
    assert module.instruction("no.such") is None


def test_instruction_text_shows_operands_attributes_and_the_fused_body():
    module = parse_module(mlp_module(3, 8), 3)
    text = instruction_text(module, "add_relu_fusion")
    lines = text.splitlines()
    assert lines[0].startswith("%add_relu_fusion = f32[8,64] fusion(%dot.1, %constant.")
    assert lines[0].endswith("kind=kLoop, calls=%fused_add_relu_fusion")
    assert lines[1] == "  # aten__maximum at train.py:15"
    assert lines[2] == "%fused_add_relu_fusion {" and lines[-1] == "}"
    assert any(line.startswith("  ROOT %maximum.") for line in lines)
    assert instruction_text(module, "p0.2") == "%p0.2 = f32[8,256] parameter(0)\n  # aten__parameter at train.py:14"
    assert instruction_text(module, "constant.5").startswith("%constant.5 = f32[] constant(0.5)")
    assert instruction_text(module, "nope") is None


def test_framework_files_and_user_frames():
    assert is_framework_file("/venv/lib/python3.11/site-packages/torch/nn/functional.py")
    assert is_framework_file("/usr/lib/python3.11/site-packages/torch_xla/core/xla_model.py")
    assert is_framework_file("/usr/lib/python3.11/contextlib.py")
    assert not is_framework_file("/venv/lib/python3.11/site-packages/diffusers/schedulers/x.py")
    assert not is_framework_file("/home/me/train.py")
    assert not is_framework_file("/home/me/xlaprof/train.py")  # a checkout named like us is the user's
    assert is_framework_file("/repo/collectors/spans.py") and is_framework_file("<frozen runpy>")
    assert not is_framework_file("/repo/collectors/demo_worker.py")  # the demo plays the user
    # A frame index whose parents loop back is followed once, not forever.
    builder = ModuleBuilder("m", 1)
    builder.parameter(0, "f32", (2,), source="train.py:3")
    frames = builder.module.stack_frame_index
    frames.stack_frames[0].parent_frame_id = 3  # the outermost frame now points at the innermost
    walked = Frames(frames).frames(3)
    assert [f[1] for f in walked] == [1697, 3, 7]


def test_program_ids_in_event_names():
    assert program_of("SyncTensorsGraph.139(4)") == 4 and module_name("SyncTensorsGraph.139(4)") == "SyncTensorsGraph.139"
    assert program_of("jit_step(-12)") == -12 and program_of("SyncTensorsGraph.139") is None


def _metadata_space(records: dict[int, bytes]):
    builder = XSpaceBuilder()
    builder.task_environment(100.0)
    builder.plane("/host:CPU").line("python").event("x", 1, 1)
    plane = builder.plane("/host:metadata")
    for program, data in records.items():
        plane.metadata_event(program, f"SyncTensorsGraph.5({program})", **{"Hlo Proto": data})
    return read_xspace(builder.to_bytes())


def test_modules_are_parsed_lazily_and_bad_records_are_listed_not_raised():
    modules = hlo_modules(_metadata_space({3: mlp_module(3, 8), 9: b"\xff\xff\xff", 11: b""}))
    assert modules.ids() == [3, 9, 11] and modules.name(9) == "SyncTensorsGraph.5"
    assert modules._parsed == {}  # nothing parsed until asked
    assert modules.get(3).signature.parameters[0].text == "f32[8,256]"
    assert modules.get(9) is None and modules.get(11) is None and modules.get(12) is None
    assert len(modules.errors) == 2 and all(e.startswith("program ") for e in modules.errors)
    with pytest.raises(HloDecodeError, match="program 9"):
        parse_module(b"\xff\xff\xff", 9)


def test_a_capture_with_corrupt_hlo_still_analyses(tmp_path):
    good = StepProgram(1, "a" * 32, mlp_module(1, 8), (("dot.1", "dot", 0.5),))
    bad = StepProgram(2, "b" * 32, b"\x0a\x05\xff", (("dot.1", "dot", 0.5),))
    data = training_capture(steps=4, devices=1, programs=[good, bad, good, bad], shape=TrainingShape(jitter_us=0))
    report = analyze(Session.load(write_session(str(tmp_path), "r", {"w_1": data})))
    (explanation,) = report.recompiles
    assert explanation.kind.value == "unknown" and explanation.graphs == 2
    assert report.workers[0].hlo.errors and report.device_profile.graphs


def test_xspace_schema_keeps_metadata_stats_of_every_plane():
    space = _metadata_space({5: b"abc"})
    plane = space.plane("/host:metadata")
    assert list(plane.metadata_ids) == [5] and plane.metadata_stats == {0: {"Hlo Proto": b"abc"}}
    assert xspace_schema.XSpace  # the reader's own schema is untouched by the HLO one
