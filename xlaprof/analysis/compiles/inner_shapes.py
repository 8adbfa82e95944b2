"""Sizes that change inside a graph: intermediates whose dimensions vary across graphs whose inputs do not.

Contract: ``varying_intermediates(modules)`` takes the compiled ``HloModule`` of each graph of a
place (compile order; their entry inputs have the same shapes) and returns ``InnerShapes``:
- ``sizes``: {symbol: size per graph} for each dimension size that varies inside the graphs
  (``S`` for the most used, then ``N``, ``L``, ...); a size that is a whole multiple of a smaller
  one (a flattened ``[2,S,32]`` is ``64S``) is that one's, not a symbol of its own.
- ``origins``: the instructions that make such a size, ``Origin`` rows (opcode, the framework
  op, the shape with symbols, the Python line from ``XLA_HLO_DEBUG=1`` metadata): an instruction
  whose output has a varying size that none of its operands has, e.g. an ``iota``
  (``torch.arange(n)``), a ``broadcast`` (``torch.randn(b, n, d)``, ``expand``, ``full``) or a
  ``slice`` by a Python int. One row per Python line (its most telling instruction, ``MAKERS``),
  and per opcode among those without a line; those with a line first.
Instructions are matched across graphs by aligning the entry computations' instruction sequences
(opcode, rank, dtype), then the computations that matched instructions call, likewise; an
instruction without a counterpart in every graph is skipped.
Fusions, calls and the parameters of fused computations only carry the sizes of what they hold.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from xlaprof.hlo import HloModule, Shape

SYMBOLS = "SNLKMTUVW"
# Instructions that make a size, the most telling first (a line's origin is its most telling one).
MAKERS = ("iota", "slice", "dynamic-slice", "pad", "concatenate", "rng", "rng-bit-generator", "broadcast")
CONTAINERS = frozenset({"fusion", "call", "while", "conditional", "parameter", "tuple", "get-tuple-element"})


@dataclass(frozen=True)
class Origin:
    opcode: str  # "iota", "broadcast", "slice", ...
    op_type: str  # the framework op ("aten__normal"), where recorded
    pattern: str  # its shape with the varying sizes as symbols: "s64[S]"
    source: str | None  # the Python line that created it (XLA_HLO_DEBUG=1)
    symbols: tuple[str, ...]  # the symbols it makes


@dataclass
class InnerShapes:
    sizes: dict[str, list[int]] = field(default_factory=dict)  # symbol -> size per graph
    origins: list[Origin] = field(default_factory=list)


def varying_intermediates(modules: list[HloModule]) -> InnerShapes:
    matched = _matched_instructions(modules)
    varying: dict[tuple, list[tuple]] = {}  # instruction key -> per dim, its sizes across graphs (None: fixed)
    for key, protos in matched.items():
        shapes = [Shape.of(p.shape) for p in protos]
        if shapes[0].dtype == "tuple" or len({len(s.dims) for s in shapes}) > 1:
            continue
        dims = [tuple(s.dims[d] for s in shapes) for d in range(len(shapes[0].dims))]
        if any(len(set(values)) > 1 for values in dims):
            varying[key] = [values if len(set(values)) > 1 else None for values in dims]
    symbols = _symbols([values for dims in varying.values() for values in dims if values is not None])
    if not symbols:
        return InnerShapes()
    positions: dict[str, dict[int, int]] = {}  # computation -> instruction id (first graph) -> position
    for computation, k in matched:
        positions.setdefault(computation, {})[matched[computation, k][0].id] = k
    first = modules[0]
    found: dict[tuple, Origin] = {}
    for (computation, k), dims in varying.items():
        proto = matched[computation, k][0]
        if proto.opcode in CONTAINERS:
            continue
        carried = {_symbol_of(v, symbols)[0] for operand in proto.operand_ids
                   for v in varying.get((computation, positions[computation].get(operand, -1)), ()) if v is not None}
        made = {_symbol_of(v, symbols)[0] for v in dims if v is not None} - carried - {None}
        if not made:
            continue
        instruction = first.instruction(proto.name)
        origin = Origin(proto.opcode, instruction.op_type if instruction else "",
                        _pattern(Shape.of(proto.shape), dims, symbols),
                        instruction.source if instruction else None, tuple(sorted(made)))
        key = origin.source or origin.opcode
        if key not in found or _rank(origin) < _rank(found[key]):
            found[key] = origin
    origins = sorted(found.values(), key=lambda o: (o.source is None, o.source or "", _rank(o)))
    return InnerShapes({s: list(values) for values, s in symbols.items()}, origins)


def _rank(origin: Origin) -> int:
    return MAKERS.index(origin.opcode) if origin.opcode in MAKERS else len(MAKERS)


def _matched_instructions(modules: list[HloModule]) -> dict[tuple, list]:
    """(computation name, position) in the first graph -> that instruction's proto in each graph,
    for the instructions every graph has a counterpart of."""
    first = modules[0]
    matched = {(c.name, k): [i] for c in first.proto.computations for k, i in enumerate(c.instructions)}
    for other in modules[1:]:
        pairs = _aligned(first, other)
        matched = {key: protos + [pairs[key]] for key, protos in matched.items() if key in pairs}
    return matched


def _aligned(first: HloModule, other: HloModule) -> dict[tuple, object]:
    """(computation name, position) in ``first`` -> the matching instruction of ``other``: the entry
    computations aligned by their instructions' opcodes and shapes' ranks, and the computations
    that matched instructions call (fusions, reductions), likewise, from there."""
    pairs: dict[tuple, object] = {}
    todo, seen = [(first.entry, other.entry)], set()
    while todo:
        mine, theirs = todo.pop()
        if mine is None or theirs is None or mine.name in seen:
            continue
        seen.add(mine.name)
        a, b = list(mine.instructions), list(theirs.instructions)
        matcher = difflib.SequenceMatcher(None, [_token(i) for i in a], [_token(i) for i in b], autojunk=False)
        for block in matcher.get_matching_blocks():
            for n in range(block.size):
                x, y = a[block.a + n], b[block.b + n]
                pairs[mine.name, block.a + n] = y
                if len(x.called_computation_ids) == len(y.called_computation_ids):
                    todo += [(first.computation(cx), other.computation(cy))
                             for cx, cy in zip(x.called_computation_ids, y.called_computation_ids)]
    return pairs


def _token(instruction) -> tuple:
    return instruction.opcode, instruction.fusion_kind, len(instruction.shape.dimensions), instruction.shape.element_type


def _symbols(all_values: list[tuple]) -> dict[tuple, str]:
    """Size tuples (one size per graph) that vary -> symbols. A tuple that is a whole multiple of a
    smaller one is that one's (a flattened ``[2,S,32]`` is ``64S``); the most used sizes get the
    first symbols."""
    counts: dict[tuple, int] = {}
    for values in all_values:
        counts[values] = counts.get(values, 0) + 1
    groups: dict[tuple, int] = {}  # the smallest tuple of a group -> instructions using the group
    for values in sorted(counts):
        base = next((b for b in groups if _multiple(values, b)), values)
        groups[base] = groups.get(base, 0) + counts[values]
    ranked = sorted(groups, key=lambda v: (-groups[v], v))
    return {values: SYMBOLS[k] if k < len(SYMBOLS) else f"D{k}" for k, values in enumerate(ranked)}


def _multiple(values: tuple, base: tuple) -> bool:
    """``values`` is the same whole multiple of ``base`` in every graph."""
    if any(b <= 0 or v <= 0 or v % b for v, b in zip(values, base)):
        return False
    return len({v // b for v, b in zip(values, base)}) == 1


def _symbol_of(values: tuple, symbols: dict[tuple, str]) -> tuple[str | None, str]:
    """(symbol, how a dimension with these sizes reads): "S", or "64S" for a multiple, "S/2"."""
    if values in symbols:
        return symbols[values], symbols[values]
    for base, symbol in symbols.items():
        if _multiple(values, base):
            return symbol, f"{values[0] // base[0]}{symbol}"
    return None, str(values[0])


def _pattern(shape: Shape, dims: list, symbols: dict) -> str:
    text = [_symbol_of(values, symbols)[1] if values is not None else str(size) for size, values in zip(shape.dims, dims)]
    return f"{shape.dtype}[{','.join(text)}]"
