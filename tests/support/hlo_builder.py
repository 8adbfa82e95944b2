"""Compiled HLO modules built in code with xlaprof's own schema, for captures with exact truth.

Contract:
- ``ModuleBuilder(name, program_id)`` builds an ``HloProto``: ``parameter``, ``constant``, ``op``
  and ``fusion`` add instructions to the entry computation (a fusion also adds its fused
  computation) and return their names; ``source="train.py:42"`` records a Python stack for the
  instruction (that frame called from ``train.py:7 <module>``, calling into a torch frame, as
  torch_xla records it with XLA_HLO_DEBUG=1). ``to_bytes()`` serializes it with a tuple root of
  the given outputs, or of the last instruction.
- ``mlp_module(program_id, batch, ...)``: the module of a small training step whose first input
  is ``f32[batch, features]`` and which bakes ``threshold`` in as a scalar constant, with
  ``layers`` hidden layers (more layers: a bigger graph, as a loop's trip count makes). Its
  fusions, dots and copies are named as ``MLP_OPS`` lists them.
"""
from __future__ import annotations

from xlaprof.hlo import schema

TORCH_FRAME = ("/venv/lib/python3.11/site-packages/torch/nn/functional.py", 1697, "relu")
CALLER = ("train.py", 7, "<module>")


class ModuleBuilder:
    def __init__(self, name: str, program_id: int) -> None:
        self.proto = schema.HloProto()
        self.module = self.proto.hlo_module
        self.module.name = name
        self.module.id = program_id
        self.entry = self.module.computations.add(name=name, id=1)
        self._next_id = 2
        self._ids: dict[str, int] = {}
        self._frames = self.module.stack_frame_index
        self._frame_ids: dict[tuple, int] = {}

    def _frame(self, file: str, line: int, function: str, parent: int) -> int:
        """The id of a stack frame, one per distinct (location, parent) as XLA's index keeps them."""
        key = (file, line, function, parent)
        if key in self._frame_ids:
            return self._frame_ids[key]
        index = self._frames
        names = list(index.file_names)
        if file not in names:
            index.file_names.append(file)
            names.append(file)
        functions = list(index.function_names)
        if function not in functions:
            index.function_names.append(function)
            functions.append(function)
        index.file_locations.add(file_name_id=names.index(file) + 1, function_name_id=functions.index(function) + 1,
                                 line=line)
        index.stack_frames.add(file_location_id=len(index.file_locations), parent_frame_id=parent)
        self._frame_ids[key] = len(index.stack_frames)
        return len(index.stack_frames)

    def _add(self, computation, name: str, opcode: str, dtype: str, dims: tuple, operands: list[str],
             source: str | None):
        instruction = computation.instructions.add(name=name, opcode=opcode, id=self._next_id)
        instruction.shape.element_type = schema.ELEMENT_TYPE_IDS[dtype]
        instruction.shape.dimensions.extend(dims)
        instruction.operand_ids.extend(self._ids[o] for o in operands)
        if source:
            file, line = source.rsplit(":", 1)
            outer = self._frame(*CALLER, 0)
            user = self._frame(file, int(line), "step", outer)
            instruction.metadata.stack_frame_id = self._frame(*TORCH_FRAME, user)
            instruction.metadata.op_type = "aten__" + opcode
            instruction.metadata.source_file, instruction.metadata.source_line = TORCH_FRAME[0], TORCH_FRAME[1]
        self._ids[name] = self._next_id
        self._next_id += 1
        computation.root_id = instruction.id
        return instruction

    def parameter(self, number: int, dtype: str, dims: tuple, source: str | None = None) -> str:
        name = f"p{number}.{self._next_id}"
        self._add(self.entry, name, "parameter", dtype, dims, [], source).parameter_number = number
        return name

    def constant(self, value: float, dtype: str = "f32", source: str | None = None) -> str:
        name = f"constant.{self._next_id}"
        literal = self._add(self.entry, name, "constant", dtype, (), [], source).literal
        literal.shape.element_type = schema.ELEMENT_TYPE_IDS[dtype]
        (literal.f32s if dtype == "f32" else literal.s32s).append(value)
        return name

    def op(self, name: str, opcode: str, dtype: str, dims: tuple, operands: list[str], source: str | None = None) -> str:
        self._add(self.entry, name, opcode, dtype, dims, operands, source)
        return name

    def fusion(self, name: str, kind: str, dtype: str, dims: tuple, operands: list[str], body: list[str],
               source: str | None = None) -> str:
        """A fusion whose fused computation applies ``body`` opcodes in a chain to its parameters."""
        fused = self.module.computations.add(name=f"fused_{name}", id=len(self.module.computations) + 100,
                                             is_fusion_computation=True)
        last = []
        for k, operand in enumerate(operands):
            param = self._add(fused, f"param_{k}.{self._next_id}", "parameter", dtype, dims, [], None)
            param.parameter_number = k
            last = [param.name]
        for opcode in body:
            last = [self._add(fused, f"{opcode}.{self._next_id}", opcode, dtype, dims, last, source).name]
        instruction = self._add(self.entry, name, "fusion", dtype, dims, operands, None)
        instruction.fusion_kind = kind
        instruction.called_computation_ids.append(fused.id)
        return name

    def to_bytes(self, outputs: list[str] | None = None) -> bytes:
        outputs = outputs or [self.entry.instructions[-1].name]
        root = self._add(self.entry, "tuple", "tuple", "f32", (), outputs, None)
        root.shape.element_type = schema.TUPLE
        for name in outputs:
            source = next(i for i in self.entry.instructions if i.name == name)
            root.shape.tuple_shapes.add().CopyFrom(source.shape)
        self.module.entry_computation_name = self.entry.name
        self.module.entry_computation_id = self.entry.id
        return self.proto.SerializeToString()


# The instructions of mlp_module that run as device ops, with (category, share of the step's time).
MLP_OPS = {"dot.1": ("dot", 0.40), "add_relu_fusion": ("loop fusion", 0.25), "dot.2": ("dot", 0.20),
           "reduce_fusion": ("input fusion", 0.10), "copy.1": ("copy", 0.05)}


def mlp_module(program_id: int, batch: int, *, features: int = 256, hidden: int = 64, threshold: float = 0.5,
               layers: int = 1, name: str = "SyncTensorsGraph.93", sources: bool = True) -> bytes:
    src = (lambda line: f"train.py:{line}") if sources else (lambda line: None)  # noqa: E731
    b = ModuleBuilder(name, program_id)
    x = b.parameter(0, "f32", (batch, features), source=src(14))
    w1 = b.parameter(1, "f32", (features, hidden), source=src(15))
    w2 = b.parameter(2, "f32", (hidden, 1), source=src(15))
    limit = b.constant(threshold, source=src(16))
    h = b.op("dot.1", "dot", "f32", (batch, hidden), [x, w1], source=src(15))
    h = b.fusion("add_relu_fusion", "kLoop", "f32", (batch, hidden), [h, limit], ["add", "maximum"], source=src(15))
    for layer in range(1, layers):
        h = b.fusion(f"layer_fusion.{layer}", "kLoop", "f32", (batch, hidden), [h], ["multiply", "add"],
                     source=src(20))
    out = b.op("dot.2", "dot", "f32", (batch, 1), [h, w2], source=src(15))
    loss = b.fusion("reduce_fusion", "kInput", "f32", (), [out], ["reduce"], source=src(17))
    new_w1 = b.op("copy.1", "copy", "f32", (features, hidden), [w1])
    return b.to_bytes([loss, new_w1])
