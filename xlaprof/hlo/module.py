"""One compiled HLO module as xlaprof reads it: its entry signature, its instructions, their source.

Contract:
- ``parse_module(data, program_id)`` parses the bytes of an ``HloProto`` (what XLA records per
  compiled program in a capture's ``/host:metadata`` plane) into an ``HloModule``; bytes that do
  not parse raise ``HloDecodeError`` naming the program.
- ``HloModule.signature`` is the ``GraphSignature`` the recompile explainer compares: the entry
  computation's parameters and results (``Shape``), the instruction count over all computations,
  opcode counts, and the scalar constants with their source lines. Computed once, on first use.
- ``HloModule.work`` is what the program computes, as a multiset: per (opcode, dtype, dims) of the
  instructions of every computation (fused ones included) that compute values, how many; each
  weighs its output's element count, ``work_weight`` is the total. The bookkeeping (parameters,
  constants, tuples, copies, reshapes, broadcasts) and the calls that only hold other computations
  (fusion, call, while, conditional) are left out. ``shared_work(a, b)`` is the weight of ``a``'s
  work that ``b`` computes too (an instruction matched at most as many times as ``b`` holds it).
- ``HloModule.instruction(name)`` finds an instruction of any computation by name (the names
  that op events carry; a ``.clone`` suffix of the CPU runtime's copies is ignored) as an
  ``Instruction``: opcode, category, shape, source line and call stack, and the proto itself.
- Source lines come from the instruction's metadata: with ``XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1``
  torch_xla records the Python stack of each op (``stack_frame_id`` into the module's frame
  index); ``source`` is its innermost frame outside torch, torch_xla and xlaprof (see
  ``hlo.source``), ``stack`` the frames outermost first as "file:line function".
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from google.protobuf.message import DecodeError

from xlaprof.errors import BadProfileError
from xlaprof.hlo import schema
from xlaprof.hlo.source import Frames

# Instructions that move, name or hold values rather than compute them: not a program's work.
NOT_WORK = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "copy", "reshape", "broadcast",
                      "fusion", "call", "while", "conditional", "after-all", "add-dependency"})
CLONE_SUFFIX = ".clone"  # XLA:CPU runs some instructions as renamed copies, e.g. "fusion.1.clone"


class HloDecodeError(BadProfileError):
    """A compiled HLO module in a capture that cannot be decoded."""


@dataclass(frozen=True)
class Shape:
    """An array shape (``dtype``, ``dims``) or a tuple of shapes (``dtype == "tuple"``)."""

    dtype: str  # "f32", "bf16", "pred", ..., or "tuple"
    dims: tuple[int, ...] = ()
    elements: tuple[Shape, ...] = ()  # the element shapes of a tuple

    @staticmethod
    def of(proto) -> Shape:
        dtype = schema.ELEMENT_TYPES.get(proto.element_type, f"type{proto.element_type}")
        if proto.element_type == schema.TUPLE:
            return Shape(dtype, (), tuple(Shape.of(t) for t in proto.tuple_shapes))
        return Shape(dtype, tuple(proto.dimensions))

    @property
    def text(self) -> str:
        """As HLO text writes it: ``f32[8,256]``, ``(f32[], s32[4])``."""
        if self.dtype == "tuple":
            return "(" + ", ".join(e.text for e in self.elements) + ")"
        return f"{self.dtype}[{','.join(map(str, self.dims))}]"

    @property
    def flat(self) -> tuple[Shape, ...]:
        """A tuple's elements, or the shape itself."""
        return self.elements if self.dtype == "tuple" else (self,)


@dataclass(frozen=True)
class Constant:
    """A scalar constant baked into the graph."""

    dtype: str
    value: float | int | bool
    source: str | None  # "file:line" that created it, with XLA_HLO_DEBUG=1


@dataclass(frozen=True)
class GraphSignature:
    """What the recompile explainer compares between two graphs."""

    parameters: tuple[Shape, ...]  # the entry computation's inputs, by parameter number
    parameter_sources: tuple[str | None, ...]  # per input: the "file:line" that created it, where known
    results: tuple[Shape, ...]  # the entry computation's outputs (a tuple's elements)
    instruction_count: int  # over all computations
    opcodes: dict[str, int]  # opcode -> instructions, over all computations
    constants: tuple[Constant, ...]  # scalar constants of all computations, in module order
    sources: dict[str, int]  # "file:line" -> instructions it created (XLA_HLO_DEBUG=1), over all computations

    @property
    def family(self) -> tuple:
        """Graphs of one family differ at most in dimension sizes, dtypes, constants and instructions."""
        ranks = lambda shapes: tuple(len(s.dims) for s in shapes)  # noqa: E731
        return ranks(self.parameters), ranks(self.results)


@dataclass(frozen=True)
class Instruction:
    name: str
    opcode: str
    category: str  # the opcode, or "<kind> fusion" for fusions ("loop fusion", "output fusion")
    shape: Shape
    computation: str  # the computation holding it
    source: str | None  # innermost user frame "file:line", where the metadata has one
    stack: tuple[str, ...]  # "file:line function", outermost first
    op_type: str  # the framework op (e.g. "aten__addmm"), where recorded
    proto: object = field(repr=False, compare=False)  # the HloInstructionProto


class HloModule:
    """A compiled program: ``parse_module(data, program_id)`` makes one."""

    def __init__(self, proto, program_id: int) -> None:
        self.proto = proto  # the HloModuleProto
        self.program_id = program_id
        self.name = proto.name
        self._frames = Frames(proto.stack_frame_index)

    @cached_property
    def computations(self) -> dict[int, object]:
        return {c.id: c for c in self.proto.computations}

    @property
    def entry(self):
        found = self.computations.get(self.proto.entry_computation_id)
        if found is None:  # older modules name it only
            found = next((c for c in self.proto.computations if c.name == self.proto.entry_computation_name),
                         self.proto.computations[-1] if len(self.proto.computations) else None)
        return found

    @cached_property
    def signature(self) -> GraphSignature:
        opcodes: Counter[str] = Counter()
        origins: Counter[tuple] = Counter()  # (frame id, file, line) -> instructions; sources resolved once each
        constants = []
        count = 0
        for computation in self.proto.computations:
            count += len(computation.instructions)
            for instruction in computation.instructions:
                opcodes[instruction.opcode] += 1
                metadata = instruction.metadata
                if metadata.stack_frame_id or metadata.source_file:
                    origins[metadata.stack_frame_id, metadata.source_file, metadata.source_line] += 1
                if instruction.opcode == "constant" and not len(instruction.shape.dimensions) \
                        and instruction.shape.element_type != schema.TUPLE:
                    value = scalar_value(instruction.literal)
                    if value is not None:
                        constants.append(Constant(schema.ELEMENT_TYPES.get(instruction.shape.element_type, "?"),
                                                  value, self._frames.source(metadata)))
        sources: Counter[str] = Counter()
        for (frame, file, line), n in origins.items():
            sources[self._frames.source_of(frame, file, line)] += n
        parameters = sorted((i for i in self.entry.instructions if i.opcode == "parameter"),
                            key=lambda i: i.parameter_number) if self.entry is not None else []
        program = self.proto.host_program_shape
        if len(program.parameters) and len(program.parameters) == len(parameters):
            shapes = tuple(Shape.of(p) for p in program.parameters)
            result = Shape.of(program.result)
        else:
            shapes = tuple(Shape.of(p.shape) for p in parameters)
            root = self._root()
            result = Shape.of(root.shape) if root is not None else Shape("tuple")
        return GraphSignature(shapes, tuple(self._frames.source(p.metadata) for p in parameters), result.flat,
                              count, dict(opcodes), tuple(constants), dict(sources))

    @cached_property
    def work_weight(self) -> int:
        return sum(count * _weight(key) for key, count in self.work.items())

    @cached_property
    def work(self) -> Counter[tuple]:
        items: Counter[tuple] = Counter()
        for computation in self.proto.computations:
            for instruction in computation.instructions:
                if instruction.opcode not in NOT_WORK:
                    shape = instruction.shape
                    items[instruction.opcode, shape.element_type, tuple(shape.dimensions)] += 1
        return items

    def instruction(self, name: str) -> Instruction | None:
        found = self._by_name.get(name)
        if found is None and name.endswith(CLONE_SUFFIX):
            found = self._by_name.get(name[: -len(CLONE_SUFFIX)])
        if found is None:
            return None
        computation, proto = found
        category = f"{proto.fusion_kind[1:].lower() if proto.fusion_kind.startswith('k') else proto.fusion_kind} " \
                   f"fusion" if proto.opcode == "fusion" and proto.fusion_kind else proto.opcode
        metadata = self._metadata_of(proto)
        return Instruction(proto.name, proto.opcode, category, Shape.of(proto.shape), computation.name,
                           self._frames.source(metadata), self._frames.stack(metadata), metadata.op_type, proto)

    def computation(self, computation_id: int):
        return self.computations.get(computation_id)

    @cached_property
    def _by_name(self) -> dict[str, tuple[object, object]]:
        return {i.name: (c, i) for c in self.proto.computations for i in c.instructions}

    def _root(self):
        entry = self.entry
        if entry is None or not len(entry.instructions):
            return None
        return next((i for i in entry.instructions if i.id == entry.root_id), entry.instructions[-1])

    def _metadata_of(self, proto):
        """An instruction's metadata; a fusion without its own takes its fused root's."""
        if (proto.metadata.source_file or proto.metadata.stack_frame_id) or proto.opcode != "fusion":
            return proto.metadata
        for called in proto.called_computation_ids:
            fused = self.computations.get(called)
            if fused is None:
                continue
            root = next((i for i in fused.instructions if i.id == fused.root_id), None)
            with_source = [i for i in fused.instructions if i.metadata.source_file or i.metadata.stack_frame_id]
            if root is not None and (root.metadata.source_file or root.metadata.stack_frame_id):
                return root.metadata
            if with_source:
                return with_source[-1].metadata
        return proto.metadata


def shared_work(a: HloModule, b: HloModule) -> int:
    """The weight of ``a.work`` that ``b`` computes too."""
    return sum(min(count, b.work.get(key, 0)) * _weight(key) for key, count in a.work.items())


def _weight(key: tuple) -> int:
    """An instruction's weight: its output's element count (1 for a scalar or a tuple)."""
    return int(np.prod(key[2], dtype=np.int64)) if key[2] else 1


def parse_module(data: bytes, program_id: int) -> HloModule:
    """The ``HloModule`` in the bytes of an ``HloProto``; raises ``HloDecodeError``."""
    hlo = schema.HloProto()
    try:
        hlo.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise HloDecodeError(f"program {program_id}: the compiled HLO module does not decode ({exc})") from None
    if not hlo.HasField("hlo_module") or not len(hlo.hlo_module.computations):
        raise HloDecodeError(f"program {program_id}: the capture's HLO record holds no module")
    return HloModule(hlo.hlo_module, program_id)


# The value of a literal holding one number; None for arrays, tuples and unknown types.
_SCALAR_FIELDS = ("f32s", "f64s", "s32s", "s64s", "u32s", "u64s", "preds")
# Literal fields holding little-endian bytes, with their numpy type ("bf16" is read as the top
# half of an f32).
_BYTE_FIELDS = (("bf16s", "bf16"), ("f16s", "<f2"), ("s8s", "i1"), ("u8s", "u1"), ("s16s", "<i2"),
                ("u16s", "<u2"))


def scalar_value(literal) -> float | int | bool | None:
    for name in _SCALAR_FIELDS:
        values = getattr(literal, name)
        if len(values) == 1:
            return values[0]
    for name, dtype in _BYTE_FIELDS:
        data = getattr(literal, name)
        if not data:
            continue
        if dtype == "bf16":
            return float(np.frombuffer(data[:2].rjust(4, b"\0"), "<f4")[0]) if len(data) == 2 else None
        values = np.frombuffer(data, dtype)
        return values[0].item() if values.size == 1 else None
    return None
