"""The part of XLA's HLO protos that xlaprof reads, declared here so that reading needs only ``protobuf``.

Contract: ``HloProto``, ``HloModuleProto``, ``HloComputationProto``, ``HloInstructionProto``,
``ShapeProto``, ``ProgramShapeProto``, ``OpMetadata``, ``LiteralProto`` and
``StackFrameIndexProto`` are protobuf message classes wire-compatible with XLA's
``xla/service/hlo.proto`` and ``xla/xla_data.proto`` for the fields declared below (field
numbers are the compatibility contract; names follow XLA's). Every other field of a real module
(layouts, buffer assignment, backend configs, schedules, ...) is kept by protobuf as unknown
and ignored. ``PrimitiveType`` enums are declared as ``int32`` (the same varint on the wire);
``ELEMENT_TYPES`` names them as HLO text does (``f32``, ``bf16``, ``pred``, ...).

Like ``xlaprof.xspace.schema``, the classes are built from descriptors at import time
(``xlaprof.xspace.protos``): no generated ``*_pb2.py``, no ``protoc``, no xla or tensorflow.
"""
from __future__ import annotations

from xlaprof.xspace.protos import FIELD as _T
from xlaprof.xspace.protos import Message, message_classes

_OPT, _REP = _T.LABEL_OPTIONAL, _T.LABEL_REPEATED
_I64, _I32, _STR, _BYTES, _BOOL = _T.TYPE_INT64, _T.TYPE_INT32, _T.TYPE_STRING, _T.TYPE_BYTES, _T.TYPE_BOOL
_MSG = _T.TYPE_MESSAGE

# message -> [(field name, number, type, label, message type or None)]
_MESSAGES: dict[str, list[tuple]] = {
    "HloProto": [
        ("hlo_module", 1, _MSG, _OPT, "HloModuleProto"),
    ],
    "HloModuleProto": [
        ("name", 1, _STR, _OPT, None),
        ("entry_computation_name", 2, _STR, _OPT, None),
        ("computations", 3, _MSG, _REP, "HloComputationProto"),
        ("host_program_shape", 4, _MSG, _OPT, "ProgramShapeProto"),
        ("id", 5, _I64, _OPT, None),
        ("entry_computation_id", 6, _I64, _OPT, None),
        ("stack_frame_index", 17, _MSG, _OPT, "StackFrameIndexProto"),
    ],
    "HloComputationProto": [
        ("name", 1, _STR, _OPT, None),
        ("instructions", 2, _MSG, _REP, "HloInstructionProto"),
        ("program_shape", 4, _MSG, _OPT, "ProgramShapeProto"),
        ("id", 5, _I64, _OPT, None),
        ("root_id", 6, _I64, _OPT, None),
        ("is_fusion_computation", 7, _BOOL, _OPT, None),
    ],
    "HloInstructionProto": [
        ("name", 1, _STR, _OPT, None),
        ("opcode", 2, _STR, _OPT, None),
        ("shape", 3, _MSG, _OPT, "ShapeProto"),
        ("metadata", 7, _MSG, _OPT, "OpMetadata"),
        ("literal", 8, _MSG, _OPT, "LiteralProto"),
        ("parameter_number", 9, _I64, _OPT, None),
        ("fusion_kind", 11, _STR, _OPT, None),
        ("tuple_index", 13, _I64, _OPT, None),
        ("dimensions", 14, _I64, _REP, None),
        ("custom_call_target", 28, _STR, _OPT, None),
        ("id", 35, _I64, _OPT, None),
        ("operand_ids", 36, _I64, _REP, None),
        ("called_computation_ids", 38, _I64, _REP, None),
        ("comparison_direction", 63, _STR, _OPT, None),
    ],
    "ShapeProto": [
        ("element_type", 2, _I32, _OPT, None),
        ("dimensions", 3, _I64, _REP, None),
        ("tuple_shapes", 4, _MSG, _REP, "ShapeProto"),
        ("is_dynamic_dimension", 6, _BOOL, _REP, None),
    ],
    "ProgramShapeProto": [
        ("parameters", 1, _MSG, _REP, "ShapeProto"),
        ("result", 2, _MSG, _OPT, "ShapeProto"),
        ("parameter_names", 3, _STR, _REP, None),
    ],
    "OpMetadata": [
        ("op_type", 1, _STR, _OPT, None),
        ("op_name", 2, _STR, _OPT, None),
        ("source_file", 3, _STR, _OPT, None),
        ("source_line", 4, _I32, _OPT, None),
        ("stack_frame_id", 15, _I32, _OPT, None),
    ],
    "LiteralProto": [
        ("shape", 1, _MSG, _OPT, "ShapeProto"),
        ("preds", 2, _BOOL, _REP, None),
        ("u8s", 3, _BYTES, _OPT, None),
        ("s32s", 4, _I32, _REP, None),
        ("s64s", 5, _I64, _REP, None),
        ("u32s", 6, _T.TYPE_UINT32, _REP, None),
        ("u64s", 7, _T.TYPE_UINT64, _REP, None),
        ("f32s", 8, _T.TYPE_FLOAT, _REP, None),
        ("f64s", 9, _T.TYPE_DOUBLE, _REP, None),
        ("tuple_literals", 10, _MSG, _REP, "LiteralProto"),
        ("f16s", 11, _BYTES, _OPT, None),
        ("bf16s", 13, _BYTES, _OPT, None),
        ("s8s", 15, _BYTES, _OPT, None),
        ("u16s", 16, _BYTES, _OPT, None),
        ("s16s", 17, _BYTES, _OPT, None),
    ],
    "StackFrameIndexProto": [
        ("file_names", 1, _STR, _REP, None),
        ("function_names", 2, _STR, _REP, None),
        ("file_locations", 3, _MSG, _REP, "StackFrameIndexProto.FileLocation"),
        ("stack_frames", 4, _MSG, _REP, "StackFrameIndexProto.StackFrame"),
    ],
}
_NESTED = {
    "StackFrameIndexProto": {
        "FileLocation": [("file_name_id", 1, _I32, _OPT, None), ("function_name_id", 2, _I32, _OPT, None),
                         ("line", 3, _I32, _OPT, None), ("column", 4, _I32, _OPT, None)],
        "StackFrame": [("file_location_id", 1, _I32, _OPT, None), ("parent_frame_id", 2, _I32, _OPT, None)],
    },
}

# xla_data.proto's PrimitiveType numbers, named as HLO text names them.
ELEMENT_TYPES: dict[int, str] = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64", 16: "bf16", 17: "token",
    18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz",
    25: "f8e4m3fnuz", 26: "s2", 27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "s1", 31: "u1",
    32: "f4e2m1fn", 33: "f8e8m0fnu", 34: "buffer",
}
TUPLE = 13
ELEMENT_TYPE_IDS = {name: number for number, name in ELEMENT_TYPES.items()}


_NESTED_MESSAGES = {outer: {name: Message(fields) for name, fields in inner.items()} for outer, inner in _NESTED.items()}
# In the order of _MESSAGES.
(HloProto, HloModuleProto, HloComputationProto, HloInstructionProto, ShapeProto, ProgramShapeProto, OpMetadata,
 LiteralProto, StackFrameIndexProto) = message_classes("xlaprof/hlo.proto", "xlaprof.hlo", {
    name: Message(fields, nested=_NESTED_MESSAGES.get(name, {})) for name, fields in _MESSAGES.items()}).values()
