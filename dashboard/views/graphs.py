"""The compiled graphs of a session page: graphs, their ops, HLO text, and why places recompiled.

Contract (no Dash; times in ms of device time, summed over devices):
- ``graph_names(analysis)``: each graph's name for people, by (worker, program id): where it was
  compiled (its span, else its Python line; for a graph compiled before the window, the span that
  dispatched it) and the input sizes that tell it from the other
  graphs of that place (``train_step [B=368]``), since every graph of a step shares XLA's module
  name (``SyncTensorsGraph.175``); ``xla_name`` is XLA's and torch_xla's name (module, program,
  hash), kept as a detail.
- ``graph_rows(analysis)``: one row per compiled graph that ran (``SessionAnalysis.device_profile``),
  most device time first: worker, program, graph (``graph_names``; ``xla``: its XLA name), runs, total and
  median time, share of the busy time, the dispatching span and that span's own line
  (``span_source``), whether it compiled in the window.
- ``op_rows(analysis, graph)``: the HLO instructions of graph row number ``graph`` (an index into
  ``graph_rows``), most self time first: name, category, runs, self and total time, share of the
  graph's op time, source line. ``None`` for a row number that names no graph.
- ``op_text(analysis, graph, op)``: the HLO text of op row ``op`` of that graph, or a sentence
  saying why there is none (the capture holds no HLO for the program, or no such row).
- ``line_rows(analysis)``: device self time by Python line (only lines, not the no-source rest).
- ``compile_detail(analysis, compile_rows, row)``: for a row of ``overview.compile_rows``, what
  changed vs the previous graph compiled at its place, and the place's explanation.
Row numbers come from the grids' ``cellClicked["rowId"]`` (a string); anything that is not a
valid row number gives ``None``.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from dashboard.views.axis import AXIS_UNIT_US
from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.compiles.signature_diff import varying_dims
from xlaprof.analysis.device.device_profile import NO_SOURCE, GraphProfile
from xlaprof.analysis.compiles.recompiles import RecompileExplanation
from xlaprof.analysis.host.frames import short_location
from xlaprof.analysis.host.span_index import NO_SPAN
from xlaprof.hlo import GraphSignature
from xlaprof.hlo.text import instruction_text

NO_HLO = "The capture holds no compiled HLO for this program."


@dataclass(frozen=True)
class CompileDetail:
    title: str  # which compile
    changed: str  # what changed vs the previous graph of its place
    explanation: RecompileExplanation | None  # why the place recompiled, where it did


def _ms(us: float) -> float:
    return round(us / AXIS_UNIT_US, 3)


def graph_names(analysis: SessionAnalysis) -> dict[tuple[str, int], str]:
    """(worker, program id) -> the graph's name for people: its place (the span or Python line that
    compiled it, else the span that dispatched it) and, among the graphs of that place whose inputs differ only in sizes, the
    sizes that tell them apart (``varying_dims``: ``train_step [B=368]``). Graphs that still share
    a name (no HLO in the capture, or a change other than input sizes) add ``#program``."""
    places: dict[tuple[str, int], str] = {}
    for w in analysis.summaries:
        for r in w.compiles:
            if r.program_id is not None:
                places.setdefault((w.worker.label, r.program_id), r.span or short_location(r.source) or NO_SPAN)
    for g in analysis.device_profile.graphs:
        places.setdefault((g.worker, g.program_id), g.span or short_location(g.source) or NO_SPAN)
    modules = {w.worker.label: w.hlo for w in analysis.workers} if places else {}
    families: dict[tuple, list[tuple[int, GraphSignature | None]]] = defaultdict(list)
    for (worker, program), place in sorted(places.items()):
        module = modules[worker].get(program) if worker in modules else None
        signature = module.signature if module is not None else None
        families[(worker, place, signature.family if signature else None)].append((program, signature))
    names: dict[tuple[str, int], str] = {}
    for (worker, place, family), members in families.items():
        sizes = varying_dims([sig for _, sig in members])[1] if family is not None and len(members) > 1 else {}
        for i, (program, _) in enumerate(members):
            told = ", ".join(f"{symbol}={values[i]}" for symbol, values in sizes.items())
            names[(worker, program)] = f"{place} [{told}]" if told else place
    shared = Counter((worker, name) for (worker, _), name in names.items())
    return {key: name + (f" #{key[1]}" if shared[(key[0], name)] > 1 else "") for key, name in names.items()}


def xla_name(module: str | None, program_id: int | None, graph_hash: str | None = None) -> str:
    """The graph as XLA and torch_xla name it: module, program id, graph hash (a detail, in a tooltip)."""
    return " · ".join(part for part in (module or "", f"program {program_id}" if program_id is not None else "",
                                        f"hash {graph_hash}" if graph_hash else "") if part)


def graph_rows(analysis: SessionAnalysis, names: dict[tuple[str, int], str] | None = None) -> list[dict]:
    busy = analysis.busy_us
    names = graph_names(analysis) if names is None else names
    return [{"worker": g.worker, "program": g.program_id,
             "graph": names.get((g.worker, g.program_id), g.module or "program"),
             "xla": xla_name(g.module, g.program_id, g.graph_hash), "runs": g.executions,
             "total_ms": _ms(g.total_us), "median_ms": _ms(g.median_us),
             "busy_pct": round(100 * g.total_us / busy, 1) if busy > 0 else 0.0,
             "span": g.span or NO_SPAN, "span_source": g.source or "",
             "compiled": "in window" if g.compiled_in_window else "before"}
            for g in analysis.device_profile.graphs]


def op_rows(analysis: SessionAnalysis, graph: object) -> list[dict] | None:
    found = _graph(analysis, graph)
    if found is None:
        return None
    total = found.op_self_us
    return [{"op": op.name, "category": op.category, "runs": op.occurrences, "self_ms": _ms(op.self_us),
             "total_ms": _ms(op.total_us), "share_pct": round(100 * op.self_us / total, 1) if total > 0 else 0.0,
             "source": op.source or ""} for op in found.ops]


def op_text(analysis: SessionAnalysis, graph: object, op: object) -> str | None:
    found = _graph(analysis, graph)
    index = _index(op, len(found.ops)) if found is not None else None
    if index is None:
        return None
    worker = next(w for w in analysis.workers if w.worker.label == found.worker)
    module = worker.hlo.get(found.program_id)
    if module is None:
        return NO_HLO
    name = found.ops[index].name
    return instruction_text(module, name) or f"The program's HLO has no instruction named {name}."


def line_rows(analysis: SessionAnalysis) -> list[dict]:
    return [{"source": line.source, "self_ms": _ms(line.self_us), "ops": line.ops}
            for line in analysis.device_profile.lines if line.source != NO_SOURCE]


def compile_detail(analysis: SessionAnalysis, rows: list[dict], row: object) -> CompileDetail | None:
    index = _index(row, len(rows))
    if index is None:
        return None
    compile_row = rows[index]
    span = compile_row["span"] or NO_SPAN
    title = f"Compile at {compile_row['start_ms']:,.3f} ms on {compile_row['worker']}, in {span}"
    if compile_row["program"] != "":
        title += f" (program {compile_row['program']})"
    changed = compile_row["changed"] or (
        "The first graph compiled at this place in the window: nothing to compare it with."
        if compile_row["program"] != "" else NO_HLO)
    explanation = next((e for e in analysis.recompiles
                        if e.span == span and compile_row["worker"] in e.workers), None)
    return CompileDetail(title, changed, explanation)


def _graph(analysis: SessionAnalysis, row: object) -> GraphProfile | None:
    graphs = analysis.device_profile.graphs
    index = _index(row, len(graphs))
    return graphs[index] if index is not None else None


def _index(row: object, size: int) -> int | None:
    try:
        index = int(str(row))
    except ValueError:
        return None
    return index if 0 <= index < size else None
