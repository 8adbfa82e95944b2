"""HLO text of one instruction, close to XLA's own printer, for people reading an op profile.

Contract: ``instruction_text(module, name)`` returns the instruction as
``%name = f32[8,64] opcode(%operand, ...), attributes`` followed by a line with its framework op
and source, and for a fusion or call the body of each called computation (``ROOT`` marks its
root), indented. ``None`` when the module has no such instruction. Layouts, backend configs and
other attributes xlaprof does not read are left out.
"""
from __future__ import annotations

from xlaprof.hlo.module import HloModule, Shape, scalar_value

MAX_BODY_LINES = 200  # a called computation is cut after this many instructions


def instruction_text(module: HloModule, name: str) -> str | None:
    found = module.instruction(name)
    if found is None:
        return None
    proto = found.proto
    names = {i.id: i.name for c in module.proto.computations for i in c.instructions}
    lines = [_line(proto, names, module)]
    where = " at ".join(x for x in (found.op_type, found.source) if x)
    if where:
        lines.append(f"  # {where}")
    for called in proto.called_computation_ids:
        computation = module.computation(called)
        if computation is None:
            continue
        lines.append(f"%{computation.name} {{")
        for k, instruction in enumerate(computation.instructions):
            if k == MAX_BODY_LINES:
                lines.append(f"  ... {len(computation.instructions) - k} more")
                break
            root = "ROOT " if instruction.id == computation.root_id else ""
            lines.append(f"  {root}{_line(instruction, names, module)}")
        lines.append("}")
    return "\n".join(lines)


def _line(proto, names: dict[int, str], module: HloModule) -> str:
    operands = ", ".join(f"%{names.get(o, o)}" for o in proto.operand_ids)
    if proto.opcode == "parameter":
        operands = str(proto.parameter_number)
    elif proto.opcode == "constant":
        operands = _literal(proto.literal)
    attributes = []
    if len(proto.dimensions):
        attributes.append(f"dimensions={{{','.join(map(str, proto.dimensions))}}}")
    if proto.opcode == "get-tuple-element":
        attributes.append(f"index={proto.tuple_index}")
    if proto.comparison_direction:
        attributes.append(f"direction={proto.comparison_direction}")
    if proto.fusion_kind:
        attributes.append(f"kind={proto.fusion_kind}")
    if proto.custom_call_target:
        attributes.append(f'custom_call_target="{proto.custom_call_target}"')
    for called in proto.called_computation_ids:
        computation = module.computation(called)
        attributes.append(f"calls=%{computation.name if computation is not None else called}")
    tail = (", " + ", ".join(attributes)) if attributes else ""
    return f"%{proto.name} = {Shape.of(proto.shape).text} {proto.opcode}({operands}){tail}"


def _literal(literal) -> str:
    scalar = scalar_value(literal)
    if scalar is not None:
        return _number(scalar)
    for field in ("f32s", "f64s", "s32s", "s64s", "u32s", "u64s", "preds"):
        values = list(getattr(literal, field))
        if values:
            shown = ", ".join(_number(v) for v in values[:8])
            return "{" + shown + (", ..." if len(values) > 8 else "") + "}"
    return "..."


def _number(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)
