"""What differs between compiled graphs, in words: the building blocks of the recompile explainer.

Contract (pure functions over ``hlo.GraphSignature``):
- ``changes(before, after)``: the differences of one graph from the previous graph of its place,
  as short phrases ("input 4: f32[12,256] -> f32[16,256]", "constant 0 -> 1 at train.py:17",
  "120 -> 130 instructions (+4 multiply, +2 add)"); empty when the programs are the same.
- ``varying_dims(signatures)``: the input dimensions whose size changes across a family's
  graphs, named by symbols (``B`` for a leading dimension first, then ``S``, ``N``, ...); dims
  that change together (the same sizes in every graph) share a symbol, like a batch size shared
  by the inputs and labels. Returns ``SymbolicInput`` rows and {symbol: sizes per graph}.
- ``followed_dims(signatures)``: the same for graphs whose inputs differ in number, each input of
  the first graph followed to a resized input of its dtype and rank where a later graph lacks its
  shape.
- ``buckets(sizes)``: a few padded sizes that cover ``sizes`` and make fewer graphs than the sizes
  seen, by a padding rule: multiples of 8 (or of a larger power of two, to keep at most
  ``MAX_BUCKETS`` and fewer than the sizes), one size where one bucket is left, else powers of two
  when the sizes span 8x or more; ``buckets_text(padded)`` says which.
- ``sizes_text(values)``: "8, 12, 16, 20, 24", or "21, 22, ..., 39 (19 sizes, growing by 1 every
  compile)" for long runs.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from xlaprof.hlo import GraphSignature

SYMBOLS = "BSNLKMTUVW"
MAX_LISTED = 8  # sizes listed before eliding
MAX_BUCKETS = 4
MIN_BUCKET_STEP = 8  # buckets are multiples of at least 8
MAX_OPCODES = 3  # opcode deltas named in an instruction-count change
MAX_CONSTANTS = 3  # changed constants named


@dataclass(frozen=True)
class SymbolicInput:
    number: int  # parameter number of the entry computation
    pattern: str  # the shape with varying dims as symbols: "f32[B,256]"
    source: str | None  # "file:line" that created the input, with XLA_HLO_DEBUG=1
    symbols: tuple[str, ...]  # the symbols in the pattern, in order


def changes(before: GraphSignature, after: GraphSignature) -> list[str]:
    inputs = _input_changes(before, after)
    found = list(inputs)
    if not inputs:
        found += [f"output {k}: {a.text} -> {b.text}"
                  for k, (a, b) in enumerate(zip(before.results, after.results)) if a != b]
        if len(before.results) != len(after.results):
            found.append(f"{len(before.results)} -> {len(after.results)} outputs")
    if before.instruction_count != after.instruction_count or before.opcodes != after.opcodes:
        found.append(_count_change(before, after))
    elif not inputs and before.constants != after.constants:
        # Constants that follow from changed shapes (a mean's 1/N) are not worth naming.
        pairs = changed_constants(before, after)
        found += [f"constant {_number(a.value)} -> {_number(b.value)}" + (f" at {b.source}" if b.source else "")
                  for a, b in pairs[:MAX_CONSTANTS]]
        if len(pairs) > MAX_CONSTANTS:
            found.append(f"{len(pairs) - MAX_CONSTANTS} more constants")
    return found


def changed_constants(before: GraphSignature, after: GraphSignature) -> list[tuple]:
    """Pairs of scalar constants that differ, matched by position (same-structure graphs)."""
    return [(a, b) for a, b in zip(before.constants, after.constants) if a.value != b.value or a.dtype != b.dtype]


def _input_changes(before: GraphSignature, after: GraphSignature) -> list[str]:
    if len(before.parameters) != len(after.parameters):
        return [f"{len(before.parameters)} -> {len(after.parameters)} inputs"]
    return [f"input {k}: {a.text} -> {b.text}" for k, (a, b) in enumerate(zip(before.parameters, after.parameters))
            if a != b]


def _count_change(before: GraphSignature, after: GraphSignature) -> str:
    delta = Counter(after.opcodes)
    delta.subtract(before.opcodes)
    named = sorted(((n, op) for op, n in delta.items() if n), key=lambda x: (-abs(x[0]), x[1]))[:MAX_OPCODES]
    detail = ", ".join(f"{n:+d} {op}" for n, op in named)
    return f"{before.instruction_count} -> {after.instruction_count} instructions" + (f" ({detail})" if detail else "")


def varying_dims(signatures: list[GraphSignature]) -> tuple[list[SymbolicInput], dict[str, list[int]]]:
    """Inputs whose dimension sizes change across ``signatures`` (one family, in compile order)."""
    symbol_of: dict[tuple[int, ...], str] = {}
    rows: list[SymbolicInput] = []
    first = signatures[0]
    for k, shape in enumerate(first.parameters):
        dims: list[str] = []
        used: list[str] = []
        for d, size in enumerate(shape.dims):
            values = tuple(s.parameters[k].dims[d] for s in signatures)
            if len(set(values)) == 1:
                dims.append(str(size))
                continue
            if values not in symbol_of:
                symbol_of[values] = _next_symbol(set(symbol_of.values()), leading=d == 0)
            dims.append(symbol_of[values])
            used.append(symbol_of[values])
        if used:
            dtypes = {s.parameters[k].dtype for s in signatures}
            dtype = shape.dtype if len(dtypes) == 1 else "/".join(sorted(dtypes))
            rows.append(SymbolicInput(k, f"{dtype}[{','.join(dims)}]", first.parameter_sources[k], tuple(used)))
    return rows, {symbol: list(values) for values, symbol in symbol_of.items()}


def followed_dims(signatures: list[GraphSignature]) -> tuple[list[SymbolicInput], dict[str, list[int]]]:
    """``varying_dims`` for graphs whose inputs differ in number (other families): each input of the
    first graph followed through the later ones, to the same shape where the next graph still has
    it, else to a shape of its dtype and rank that the graph before did not have (the same input,
    resized: an LSTM's longer sequence also adds inputs). Only inputs followed through every graph
    count; input numbers are the first graph's."""
    first = signatures[0]
    tracks = [[shape] for shape in first.parameters]
    alive = list(range(len(tracks)))
    for before, after in zip(signatures, signatures[1:]):
        left = Counter(after.parameters)
        had = set(before.parameters)
        resized = [shape for shape in after.parameters if shape not in had and shape.dims]
        kept = []
        for k in alive:
            shape = tracks[k][-1]
            if left[shape] > 0:
                match = shape
            else:
                match = next((r for r in resized if r.dtype == shape.dtype and len(r.dims) == len(shape.dims)), None)
                if match is None:
                    continue
                resized.remove(match)
            left[match] -= 1
            tracks[k].append(match)
            kept.append(k)
        alive = kept
    followed = [replace(s, parameters=tuple(tracks[k][i] for k in alive),
                        parameter_sources=tuple(first.parameter_sources[k] for k in alive))
                for i, s in enumerate(signatures)]
    rows, sizes = varying_dims(followed)
    return [replace(row, number=alive[row.number]) for row in rows], sizes


def _next_symbol(taken: set[str], leading: bool) -> str:
    order = SYMBOLS if leading else SYMBOLS[1:] + SYMBOLS[0]
    return next((s for s in order if s not in taken), f"D{len(taken)}")


def changed_dtypes(signatures: list[GraphSignature]) -> list[tuple[int, list[str]]]:
    """(input number, dtype per graph) for inputs whose dtype changes."""
    return [(k, [s.parameters[k].dtype for s in signatures]) for k in range(len(signatures[0].parameters))
            if len({s.parameters[k].dtype for s in signatures}) > 1]


def buckets(sizes: list[int]) -> list[int]:
    """Padded sizes covering ``sizes`` that make fewer graphs than the sizes seen (a rule that keeps
    as many graphs removes no compile): multiples of 8 (of 16, 32, ... while that makes more than
    ``MAX_BUCKETS`` or no fewer than the distinct sizes), or powers of two when the sizes span 8x or
    more (the largest alone where even those are no fewer)."""
    low, high, distinct = min(sizes), max(sizes), len(set(sizes))
    if low <= 0 or high / low >= 8:
        start = max(int(math.ceil(math.log2(max(low, 1)))), 0)
        stop = int(math.ceil(math.log2(max(high, 1))))
        powers = [2 ** e for e in range(start, stop + 1)]
        return powers if len(powers) < distinct or distinct == 1 else powers[-1:]
    step = MIN_BUCKET_STEP
    count = lambda: math.ceil(high / step) - math.ceil(low / step) + 1  # noqa: E731
    while count() > MAX_BUCKETS or (distinct > 1 and count() >= distinct):
        step *= 2
    if count() == 1:  # one graph: the largest size, padded as little as the rule allows
        return [math.ceil(high / MIN_BUCKET_STEP) * MIN_BUCKET_STEP]
    return list(range(math.ceil(low / step) * step, math.ceil(high / step) * step + 1, step))


def buckets_text(padded: list[int]) -> str:
    """"multiples of 8: 16, 24, 32", "powers of two: 1, 2, 4, 8", or the one size to pad to."""
    shown = ", ".join(map(str, padded))
    if len(padded) == 1:
        return f"pad to {shown}"
    steps = {b - a for a, b in zip(padded, padded[1:])}
    return f"multiples of {steps.pop()}: {shown}" if len(steps) == 1 else f"powers of two: {shown}"


def sizes_text(values: list) -> str:
    """The distinct values in order, "8, 12, 16", or elided with their count and trend:
    "21, 22, ..., 38 (18 sizes, growing by 1 every compile)"."""
    distinct = list(dict.fromkeys(values))
    shown = [_number(v) for v in distinct]
    if len(distinct) <= MAX_LISTED:
        return ", ".join(shown)
    return f"{shown[0]}, {shown[1]}, ..., {shown[-1]} ({len(distinct)} sizes{trend(values)})"


def trend(values: list) -> str:
    """', growing by 1 every compile' when each value is the previous one plus a constant."""
    steps = {b - a for a, b in zip(values, values[1:])} if all(isinstance(v, int) for v in values) else set()
    if len(values) >= 3 and len(steps) == 1 and 0 not in steps:
        (step,) = steps
        return f", {'growing' if step > 0 else 'shrinking'} by {abs(step)} every compile"
    return ""


def _number(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
