"""Why it recompiled: the graphs compiled at one place, compared through their compiled HLO.

Contract:
- ``with_changes(records, modules)`` returns new compile records (each with the ``program_id``
  that ``programs.compile_programs`` linked), in the given order, each with its ``changed``: what
  changed vs the previous graph compiled at its place, one phrase per difference, "; "-joined
  (None for a place's first graph, or where the capture holds no HLO for it). The given records
  are left as they are.
- ``explain_recompiles(workers)`` takes, per worker, its label, compile records and ``HloModules``,
  and returns one ``RecompileExplanation`` per place that compiled more
  than one distinct graph (graph hash), most compile time first. A place is the span (name and
  ``file:line``) the compile happened in, as in ``CompileSummary``; compiles outside any span by
  the line that compiled them, and where that is unknown by graph family (same input and output
  ranks).
- A place's graphs are explained in clusters: graphs of one family (the same number and ranks of
  inputs and outputs) together. A graph of a family of its own is a one-off, said as such:
  "1 compile: the optimizer's state was created at the first step (inputs 47 -> 105), a one-off"
  when it is the first graph and the next takes its inputs plus ones shaped like them; it does
  not hide the change of the others ("3 compiles: input 0 (s64[2,S]): S = 16, 24, 40"). The
  explanation's ``kind``, data and advice are those of its largest cluster (the one-offs' advice
  follows); ``clusters`` lists each cluster (kind, compiles, graphs, one_off, summary,
  program_ids); ``summary`` joins their sentences. A place with one cluster (or only one-offs)
  is explained as one group, as before. Graphs each of a family of its own, each taking the
  previous one's inputs plus new ones shaped like them, are state created over the first steps
  (the optimizer's moments, then its step counts, a graph cut by a read where the state is not yet
  on the device): one-offs, said as such (``ADVICE_STATE_GROWING``).
- ``kind`` says what differs, in this order of precedence: ``inputs`` (their number or ranks),
  ``dtype``, ``shape`` (dimension sizes: named by symbols, "input 3 (f32[B,256]): B = 8, 12, 16
  across 3 compiles", with buckets to pad to, but none where every input that changes is a list of
  indices, [count, rank] of ints, as nonzero returns: counts of the device's data, which padding
  the step's inputs does not fix, ``ADVICE_DATA_DEPENDENT_SIZES``; where the leading dimension alone
  goes from one size to a smaller one, the last batch of a DataLoader's epoch: ``drop_last`` in
  training, padded and masked in evaluation, ``ADVICE_LAST_BATCH``; or, where no input changes,
  sizes made inside the graph, ``inner_shapes``: "S = 20, 28, 36 ..., made by s64[S] by iota at
  train.py:90", listed in ``intermediates``), ``graph_size`` (same inputs and outputs, a
  different number of instructions: a loop's trip count, a branch on a Python value),
  ``computation`` (same size, other operations), ``constant`` (only scalar constants: torch_xla
  bakes 0 and 1 in), ``none`` (the compiled programs are identical) and ``unknown`` (the
  capture holds no HLO for the graphs). ``summary`` says it in a sentence, ``advice`` how to fix it.
- ``worker_recompiles(label, records, modules)`` is one worker's part of it (what a task on a
  cluster sends back) and ``merge_recompiles(parts)`` merges the parts as ``explain_recompiles`` does.
The explanations complete the recompilation findings in ``findings.recompile_findings``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from enum import Enum

from xlaprof.analysis.compiles import signature_diff as diff
from xlaprof.analysis.compiles.compiles import CompileRecord
from xlaprof.analysis.compiles.inner_shapes import InnerShapes, varying_intermediates
from xlaprof.analysis.host.span_index import NO_SPAN
from xlaprof.hlo import GraphSignature, HloModules

MAX_LINES_NAMED = 2  # source lines named for a change in graph size
MAX_ORIGINS_NAMED = 3  # instructions named that make a size inside the graph
# What usually makes a size inside a graph, by the opcode of the instruction that makes it.
OPCODE_HINTS = {"iota": "torch.arange or position ids", "slice": "a slice by a Python int",
                "broadcast": "a tensor made of that size: randn, zeros, full, expand",
                "pad": "a pad by a Python int", "dynamic-slice": "a slice", "concatenate": "a cat"}


class ChangeKind(str, Enum):
    INPUTS = "inputs"
    DTYPE = "dtype"
    SHAPE = "shape"
    GRAPH_SIZE = "graph_size"
    COMPUTATION = "computation"
    CONSTANT = "constant"
    NONE = "none"
    UNKNOWN = "unknown"


ADVICE = {
    ChangeKind.INPUTS: (
        "The graph takes different inputs from one compile to the next: a tensor enters it on some "
        "steps only (created or moved to the device conditionally) or an input's rank changes. Keep "
        "the traced step the same every time."),
    ChangeKind.DTYPE: "An input changes dtype between steps; cast it to one dtype before the step.",
    ChangeKind.SHAPE: (
        "torch_xla compiles one graph per distinct input shape: pad {symbols} to a fixed size or "
        "bucket {them} to a few sizes ({buckets}), so that a handful of graphs serve every step."),
    ChangeKind.GRAPH_SIZE: (
        "The inputs and outputs are the same but the traced code is not: a Python loop whose trip "
        "count changes is unrolled into a different graph each time (fix the count, or use "
        "torch_xla's fori_loop/while_loop), or a branch depends on a Python value."),
    ChangeKind.COMPUTATION: (
        "The inputs, outputs and size are the same but the operations differ: a branch on a Python "
        "value, or a Python scalar that is 0 or 1 on some steps (torch_xla bakes 0 and 1 into the "
        "graph): set XLA_NO_SPECIAL_SCALARS=1, or pass the value as a tensor."),
    ChangeKind.CONSTANT: (
        "torch_xla bakes the Python scalars 0 and 1 into the graph as constants (other values "
        "travel as inputs), so a value that switches to or from 0 or 1 compiles a new graph: set "
        "XLA_NO_SPECIAL_SCALARS=1 in the worker, or pass the value as a device tensor."),
    ChangeKind.NONE: (
        "The compiled programs are identical: the traced graphs differed only before XLA's "
        "optimizations (e.g. in unused values). Run with PT_XLA_DEBUG_LEVEL=2 to see torch_xla's cause."),
    ChangeKind.UNKNOWN: (
        "The capture holds no compiled HLO for these graphs; run with PT_XLA_DEBUG_LEVEL=2 to see "
        "torch_xla's cause of each compile."),
}


ADVICE_INNER = (
    "A size inside the graph comes from a Python int (torch.arange(n), torch.randn(b, n, d, device=...), "
    "x[:, :n], expand): torch_xla compiles one graph per value. Pad {symbols} to a few sizes ({buckets}) "
    "and mask the padding, so that a handful of graphs serve every step.")
ADVICE_GROWING_SEQUENCE = (
    "{symbols} grows by one at every compile, as a sequence decoded a token at a time (a generation loop's "
    "prompt or KV cache) does: pad the prompts to one length and keep the KV cache static (transformers: "
    "generate(..., cache_implementation=\"static\") with padded input_ids and attention_mask), so one graph "
    "serves every length.")
ADVICE_LAST_BATCH = (
    "{symbol}, the first dimension of every input that changes, drops from {large} to {small}: the last, "
    "smaller batch of a DataLoader's epoch does that. In training, DataLoader(..., drop_last=True) leaves "
    "its graph out; in evaluation, pad the last batch to {large} and mask the padded rows out of the metric.")
ADVICE_DATA_DEPENDENT_SIZES = (
    "The sizes that change are counts of indices that a data-dependent op found on the "
    "device (nonzero, torch.where(mask), boolean indexing: each input is a list of indices, one row "
    "a hit), so every new count is a new graph, and padding the step's inputs does not change it. "
    "Use a fixed-shape form that stays on the device (torch.where(mask, a, b) with three arguments, a "
    "mask multiplied in, a fixed capacity per group), or the library's static option (a mixture of "
    "experts: transformers' experts_implementation=\"batched_mm\").")
ADVICE_STATE_GROWING = (
    "The step's graph gains inputs over its first steps as state comes into being (an optimizer's moments "
    "and step counts, buffers made on first use), and a read inside the step can cut it where that state "
    "is not yet on the device: each graph compiles once, while warming up, and the steps after reuse the "
    "last. Nothing in the step to fix; torch_xla's persistent compilation cache "
    "(torch_xla.runtime.initialize_cache) saves them across runs.")
ADVICE_STATE_CREATED = (
    "The optimizer creates its state (e.g. AdamW's exp_avg and exp_avg_sq) at its first step, so the first "
    "step's graph has fewer inputs than the later ones: one compile more, once; nothing to fix.")


@dataclass
class RecompileExplanation:
    span: str  # the place: the span's name (NO_SPAN outside any span)
    source: str | None  # the span's file:line
    workers: list[str]  # workers where it happened
    compiles: int  # compiles at this place (all workers)
    graphs: int  # distinct graphs compiled there (per worker, the most)
    compile_us: float  # compile time at this place (all workers)
    kind: ChangeKind
    summary: str  # what changed, in sentences
    advice: str
    inputs: list[dict] = field(default_factory=list)  # varying inputs: number, pattern, source, symbols
    sizes: dict[str, list[int]] = field(default_factory=dict)  # symbol -> size per graph, in compile order
    buckets: dict[str, list[int]] = field(default_factory=dict)  # symbol -> suggested padded sizes
    constants: list[dict] = field(default_factory=list)  # changed scalar constants: dtype, values, source
    instruction_counts: list[int] = field(default_factory=list)  # per graph, in compile order
    program_ids: list[int | None] = field(default_factory=list)  # per graph, in compile order
    # sizes made inside the graphs (inputs unchanged): opcode, op_type, pattern, source, symbols
    intermediates: list[dict] = field(default_factory=list)
    # the place's graphs in groups explained apart: kind, compiles, graphs, one_off, summary, program_ids
    clusters: list[dict] = field(default_factory=list)


def explain_recompiles(workers: list[tuple[str, list[CompileRecord], HloModules]]) -> list[RecompileExplanation]:
    return merge_recompiles([worker_recompiles(*worker) for worker in workers])


def worker_recompiles(label: str, records: list[CompileRecord], modules: HloModules) -> list[RecompileExplanation]:
    """One worker's explanations, for ``merge_recompiles``."""
    found = []
    for place, members in _places(records, modules).items():
        group = [records[k] for k in members]
        graphs = _distinct_graphs(group)
        if len(graphs) < 2:
            continue
        explanation = _explain(place, graphs, group, modules)
        explanation.workers = [label]
        explanation.compiles = len(group)
        explanation.compile_us = sum(r.dur_us for r in group)
        found.append(explanation)
    return found


def merge_recompiles(per_worker: list[list[RecompileExplanation]]) -> list[RecompileExplanation]:
    """The workers' explanations (in worker order), one per (place, kind, summary), most time first."""
    found: dict[tuple, RecompileExplanation] = {}
    for explanations in per_worker:
        for explanation in explanations:
            key = (explanation.span, explanation.source, explanation.kind, explanation.summary)
            if key in found:
                merged = found[key]
                merged.workers.append(explanation.workers[0])
                merged.compiles += explanation.compiles
                merged.compile_us += explanation.compile_us
            else:
                found[key] = replace(explanation, workers=list(explanation.workers))
    return sorted(found.values(), key=lambda e: -e.compile_us)


def with_changes(records: list[CompileRecord], modules: HloModules) -> list[CompileRecord]:
    """New records, each with what changed vs the previous graph compiled at its place (see the contract)."""
    changed: dict[int, str] = {}
    for members in _places(records, modules).values():
        previous = None
        for k in members:
            current = _signature(modules, records[k])
            if previous is not None and current is not None:
                changed[k] = "; ".join(diff.changes(previous, current)) or "the same compiled program"
            previous = current if current is not None else previous
    return [replace(r, changed=changed.get(k, r.changed)) for k, r in enumerate(records)]


def _places(records: list[CompileRecord], modules: HloModules) -> dict[tuple, list[int]]:
    """The records' indices by place, each place's in compile order."""
    places: dict[tuple, list[int]] = {}
    for k in sorted(range(len(records)), key=lambda k: records[k].start_us):
        r = records[k]
        family = None
        if r.span is None and r.source is None:
            signature = _signature(modules, r)
            family = signature.family if signature is not None else None
        places.setdefault((r.span or NO_SPAN, r.source, family), []).append(k)
    return places


def _distinct_graphs(group: list[CompileRecord]) -> list[CompileRecord]:
    seen, graphs = set(), []
    for r in group:
        key = r.graph_hash or f"#{r.start_us}"
        if key not in seen:
            seen.add(key)
            graphs.append(r)
    return graphs


def _signature(modules: HloModules, record: CompileRecord) -> GraphSignature | None:
    module = modules.get(record.program_id)
    return module.signature if module is not None else None


def _explain(place: tuple, graphs: list[CompileRecord], group: list[CompileRecord], modules: HloModules
             ) -> RecompileExplanation:
    span, source, _ = place
    where = f"in {span}" if span != NO_SPAN else "outside any span"
    base = dict(span=span, source=source, workers=[], compiles=0, graphs=len(graphs), compile_us=0.0,
                program_ids=[r.program_id for r in graphs])
    known = [(r, m) for r in graphs if (m := modules.get(r.program_id)) is not None]
    if len(known) < 2:
        return RecompileExplanation(kind=ChangeKind.UNKNOWN, advice=ADVICE[ChangeKind.UNKNOWN], summary=(
            f"{len(graphs)} different graphs compiled {where}; the capture holds the compiled HLO of "
            f"{len(known)} of them."), **base)
    base["instruction_counts"] = [m.signature.instruction_count for _, m in known]
    compiles = Counter(r.graph_hash or f"#{r.start_us}" for r in group)
    counted = lambda rs: sum(compiles[r.graph_hash or f"#{r.start_us}"] for r in rs)  # noqa: E731
    clusters = _clusters([m for _, m in known])
    if len(clusters) == len(known) and _state_growing([m.signature for _, m in known]):
        counts = " -> ".join(str(len(m.signature.parameters)) for _, m in known)
        return RecompileExplanation(kind=ChangeKind.INPUTS, advice=ADVICE_STATE_GROWING, summary=(
            f"Each graph takes the previous one's inputs and more shaped like them (inputs {counts}), "
            f"each compiled once: state created over the first steps, one-offs."), **base)
    if not any(len(c) > 1 for c in clusters) or len(clusters) == 1:
        kind, summary, extra = _classify([m for _, m in known], f"across {len(graphs)} compiles")
        return RecompileExplanation(kind=kind, summary=_capital(summary), advice=extra.pop("advice", ADVICE[kind]),
                                    **base, **extra)
    parts, main = [], None
    for members in clusters:
        records, mods = [known[k][0] for k in members], [known[k][1] for k in members]
        n = counted(records)
        if len(members) > 1:
            kind, said, extra = _classify(mods, "")
            advice = extra.pop("advice", ADVICE[kind])
            if main is None or len(members) > len(main[0]):
                main = (members, kind, extra)
        else:
            kind, said, advice = _one_off(members[0], [m.signature for _, m in known])
        parts.append(dict(kind=kind.value, compiles=n, graphs=len(members), one_off=len(members) == 1,
                          summary=f"{n} compile{'s' if n > 1 else ''}: {said[0].lower() + said[1:]}",
                          program_ids=[r.program_id for r in records], advice=advice))
    _, kind, extra = main
    advice = " ".join(dict.fromkeys([p["advice"] for p in parts if p["kind"] == kind.value]
                                    + [p["advice"] for p in parts]))
    summary = " ".join(p["summary"].rstrip(".") + "." for p in parts)
    return RecompileExplanation(kind=kind, summary=_capital(summary), advice=advice, **base, **extra,
                                clusters=[{k: v for k, v in p.items() if k != "advice"} for p in parts])


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


def _clusters(modules: list) -> list[list[int]]:
    """Graph indices grouped by family (the same number and ranks of inputs and outputs), in
    order of first appearance: graphs that differ in one way from each other are explained together."""
    by_family: dict[tuple, list[int]] = {}
    for k, module in enumerate(modules):
        by_family.setdefault(module.signature.family, []).append(k)
    return list(by_family.values())


def _one_off(k: int, signatures: list[GraphSignature]) -> tuple[ChangeKind, str, str]:
    """A graph of a family of its own, said against its neighbour in compile order."""
    mine = signatures[k]
    other = signatures[k + 1] if k + 1 < len(signatures) else signatures[k - 1]
    counts = f"inputs {len(mine.parameters)} -> {len(other.parameters)}" if k == 0 else \
        f"{len(mine.parameters)} inputs, the others {len(other.parameters)}"
    if k == 0 and _state_added(mine, other):
        return ChangeKind.INPUTS, f"the optimizer's state was created at the first step ({counts}), a one-off", \
            ADVICE_STATE_CREATED
    return ChangeKind.INPUTS, f"a one-off graph ({counts}): a tensor made or moved to the device on that step only", \
        ADVICE[ChangeKind.INPUTS]


def _state_added(first: GraphSignature, later: GraphSignature, resized: bool = True) -> bool:
    """The later graph takes the first one's inputs plus new ones shaped like them (or scalars):
    state created at the first step, like an optimizer's moments. With ``resized``, inputs whose
    size changed between the two (a new batch shape) may stand for as many unexplained new ones;
    without, every input of the first must be in the later one unchanged."""
    delta = Counter(later.parameters)
    delta.subtract(Counter(first.parameters))
    have = set(first.parameters)
    changed = -sum(n for n in delta.values() if n < 0)
    new = sum(n for shape, n in delta.items() if n > 0 and shape not in have and shape.dims)
    return len(later.parameters) > len(first.parameters) and new <= changed and (resized or changed == 0)


def _state_growing(signatures: list[GraphSignature]) -> bool:
    """Each graph takes all of the previous one's inputs, unchanged, plus new ones shaped like them
    (``_state_added`` without resized inputs: a resized one is a shape that changes, not state)."""
    return all(_state_added(a, b, resized=False) for a, b in zip(signatures, signatures[1:]))


def _classify(modules: list, across: str) -> tuple[ChangeKind, str, dict]:
    signatures = [m.signature for m in modules]
    across = f" {across}" if across else ""
    if len({s.family for s in signatures}) > 1:
        arities = diff.sizes_text([len(s.parameters) for s in signatures])
        inputs, sizes = diff.followed_dims(signatures)
        if inputs:  # inputs resized, and others added or taken away with them (a longer LSTM sequence)
            kind, summary, extra = _shape_summary(inputs, sizes, across)
            return kind, f"The graphs take {arities} inputs, and {summary}", extra
        return ChangeKind.INPUTS, f"The graphs take different inputs ({arities} inputs, or ranks change){across}.", {}
    dtypes = diff.changed_dtypes(signatures)
    if dtypes:
        said = "; ".join(f"input {k} is {diff.sizes_text(d)}" for k, d in dtypes)
        return ChangeKind.DTYPE, f"Input dtypes change{across}: {said}.", {}
    inputs, sizes = diff.varying_dims(signatures)
    if inputs:
        return _shape_summary(inputs, sizes, across)
    inner = varying_intermediates(modules)
    if inner.sizes:
        return _inner_summary(inner, across)
    counts = [s.instruction_count for s in signatures]
    if len(set(counts)) > 1 or any(s.opcodes != signatures[0].opcodes for s in signatures):
        kind = ChangeKind.GRAPH_SIZE if len(set(counts)) > 1 else ChangeKind.COMPUTATION
        said = (f"the same inputs and outputs, but {diff.sizes_text(counts)} instructions{across}"
                if kind is ChangeKind.GRAPH_SIZE else f"the same inputs, outputs and size, but other operations{across}")
        lines = _growing_lines(signatures)
        return kind, f"The graphs have {said}" + (f"; the difference comes from {lines}" if lines else "") + ".", {}
    constants = _constant_changes(signatures)
    if constants:
        said = "; ".join(f"{diff.sizes_text(c['values'])}" + (f" at {c['source']}" if c["source"] else "")
                         for c in constants)
        return ChangeKind.CONSTANT, f"The graphs differ only in scalar constants{across}: {said}.", {
            "constants": constants}
    return ChangeKind.NONE, f"The compiled programs are identical{across}.", {}


def _bucket_advice(template: str, sizes: dict[str, list[int]]) -> tuple[dict[str, list[int]], str]:
    suggested = {sym: diff.buckets(values) for sym, values in sizes.items()}
    advice = template.format(
        symbols=" and ".join(suggested), them="them" if len(suggested) > 1 else "it",
        buckets="; ".join(f"{sym}: {diff.buckets_text(b)}" if len(suggested) > 1 else diff.buckets_text(b)
                          for sym, b in suggested.items()))
    growing = [sym for sym, values in sizes.items() if _grows_by_one(values)]
    if growing:
        advice += " " + ADVICE_GROWING_SEQUENCE.format(symbols=" and ".join(growing))
    return suggested, advice


def _grows_by_one(values: list[int]) -> bool:
    """A size one larger at every compile, three compiles or more: a sequence growing a token at a time."""
    distinct = list(dict.fromkeys(values))
    return len(distinct) >= 3 and all(b - a == 1 for a, b in zip(distinct, distinct[1:]))


def _inner_summary(inner: InnerShapes, across: str) -> tuple[ChangeKind, str, dict]:
    values = "; ".join(f"{sym} = {diff.sizes_text(sizes)}" for sym, sizes in inner.sizes.items())
    made = ", ".join(f"{o.pattern} by {o.opcode}" + (f" at {o.source}" if o.source else
                                                     f" ({OPCODE_HINTS[o.opcode]})" if o.opcode in OPCODE_HINTS else "")
                     for o in inner.origins[:MAX_ORIGINS_NAMED])
    suggested, advice = _bucket_advice(ADVICE_INNER, inner.sizes)
    if not any(o.source for o in inner.origins):
        advice += " Run the worker with XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 to name the line that makes each size."
    summary = f"No input changes shape, but sizes inside the graph do: {values}{across}" + (
        f", made by {made}" if made else "") + "."
    return ChangeKind.SHAPE, summary, {
        "sizes": inner.sizes, "buckets": suggested, "advice": advice,
        "intermediates": [dict(opcode=o.opcode, op_type=o.op_type, pattern=o.pattern, source=o.source,
                               symbols=list(o.symbols)) for o in inner.origins]}


def _shape_summary(inputs: list[diff.SymbolicInput], sizes: dict[str, list[int]], across: str
                   ) -> tuple[ChangeKind, str, dict]:
    parts = []
    for row in inputs:
        made = f", created at {row.source}" if row.source else ""
        values = "; ".join(f"{sym} = {diff.sizes_text(sizes[sym])}" for sym in row.symbols)
        parts.append(f"input {row.number} ({row.pattern}{made}): {values}")
    shown = parts[:3] + ([f"and {len(parts) - 3} more inputs"] if len(parts) > 3 else [])
    if all(_index_list(row) for row in inputs):  # no input of the user's to pad: nothing to bucket
        suggested, advice = {}, ADVICE_DATA_DEPENDENT_SIZES
    else:
        suggested, advice = _bucket_advice(ADVICE[ChangeKind.SHAPE], sizes)
        last = _last_batch(inputs, sizes)
        if last:
            advice += " " + ADVICE_LAST_BATCH.format(**last)
        if not any(r.source for r in inputs):
            advice += (" Run the worker with XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 to name the line that creates "
                       "each input.")
    return ChangeKind.SHAPE, "; ".join(shown) + f"{across}.", {
        "inputs": [dict(number=r.number, pattern=r.pattern, source=r.source, symbols=list(r.symbols)) for r in inputs],
        "sizes": sizes, "buckets": suggested, "advice": advice}


def _last_batch(inputs: list[diff.SymbolicInput], sizes: dict[str, list[int]]) -> dict | None:
    """The symbol, larger and smaller size where one leading dimension alone changes, from a size to
    a smaller one and nothing else: an epoch's full batches, then its last one (a DataLoader without
    ``drop_last``); None otherwise (a batch that grows, a sequence length, several sizes)."""
    if len(sizes) != 1:
        return None
    ((symbol, values),) = sizes.items()
    distinct = list(dict.fromkeys(values))
    leading = all(_dims(row)[0] == symbol for row in inputs)
    if len(distinct) != 2 or distinct[0] <= distinct[1] or not leading:
        return None
    return {"symbol": symbol, "large": distinct[0], "small": distinct[1]}


def _dims(row: diff.SymbolicInput) -> list[str]:
    """The dimensions of an input's pattern ("f32[B,64]" -> ["B", "64"])."""
    return row.pattern[row.pattern.index("[") + 1:-1].split(",")


_INDEX_DTYPES = ("s64[", "s32[")
MAX_INDEXED_RANK = 8  # a list of indices has a column per dimension of the tensor it indexes


def _index_list(row: diff.SymbolicInput) -> bool:
    """An integer input of shape [count, rank], the count varying: what nonzero (torch.where(mask),
    argwhere, boolean indexing) returns, a row per hit, so its count is the device's data."""
    if not row.pattern.startswith(_INDEX_DTYPES) or not row.pattern.endswith("]"):
        return False
    dims = _dims(row)
    return (len(dims) == 2 and dims[0] in row.symbols and dims[1].isdigit()
            and 1 <= int(dims[1]) <= MAX_INDEXED_RANK)


def _constant_changes(signatures: list[GraphSignature]) -> list[dict]:
    if len({len(s.constants) for s in signatures}) > 1:
        return []
    changed = []
    for k, first in enumerate(signatures[0].constants):
        values = [s.constants[k].value for s in signatures]
        if len(set(values)) > 1:
            changed.append(dict(dtype=first.dtype, values=values, source=first.source))
    return changed


def _growing_lines(signatures: list[GraphSignature]) -> str:
    """The source lines whose instruction counts differ most between the smallest and largest graph."""
    small = min(signatures, key=lambda s: s.instruction_count)
    large = max(signatures, key=lambda s: s.instruction_count)
    delta = Counter(large.sources)
    delta.subtract(small.sources)
    named = [f"{line} ({n:+d} instructions)" for line, n in sorted(delta.items(), key=lambda kv: -abs(kv[1]))
             if n][:MAX_LINES_NAMED]
    return ", ".join(named)
