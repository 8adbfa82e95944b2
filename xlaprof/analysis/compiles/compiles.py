"""Compilations of one worker and of a session: counts, time, and who caused them.

Contract:
- ``compile_records(host, debug)`` lists every graph compile on the host with its span, source
  line (``HostActivity.compile_stack``: the enclosing read's line where a read forced it, else the
  Python line the sampled stacks show compiling, else the span's), graph hash and, where a ``PT_XLA_DEBUG_FILE`` was given, torch_xla's compile cause and the
  user frame that triggered it.
- ``summarize_compiles(records, workers)`` gives a ``CompileSummary``: count, total time, per-span and
  per-hash counts, and the recompiled spans: spans that compiled more than one distinct graph in
  the window, the mark of shapes that change from step to step, and ``events``, every record as a
  ``tables.Table`` row with its worker (``workers[i]`` is the label of ``records[i]``'s worker).
  Spans are keyed by name, with ``NO_SPAN`` for compiles outside any span. ``by_source`` and
  ``graphs_by_source`` count the compiles and the distinct graphs of each source line (a finding's
  place; not in the JSON report).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np

from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.common.tables import Table, columns_of
from xlaprof.analysis.host.debug_file import DebugInfo
from xlaprof.analysis.host.host_activity import HostActivity
from xlaprof.analysis.host.span_index import NO_SPAN

# The causes of a compile the capture caught mid-way (see analysis.session_analysis).
COMPILE_AT_START = "already compiling when the capture started"
COMPILE_AT_STOP = "still compiling when the capture stopped"
EDGE_COMPILE_CAUSES = (COMPILE_AT_START, COMPILE_AT_STOP)  # compiles the capture caught mid-way


@dataclass
class CompileRecord:
    start_us: float  # on the worker's clock
    dur_us: float
    graph_hash: str | None
    span: str | None
    source: str | None
    cause: str | None = None  # torch_xla's compilation cause, from the debug file
    trigger: str | None = None  # the user's file:line that triggered it, from the debug file
    program_id: int | None = None  # the compiled program (its HLO module), see analysis.programs
    changed: str | None = None  # what changed vs the previous graph of its place, see recompiles.with_changes


@dataclass(frozen=True)
class CompileTrigger:
    cause: str | None  # torch_xla's compilation cause
    trigger: str | None  # the user's file:line
    count: int  # compiles of the span with this (cause, trigger)


@dataclass
class CompileSummary:
    __repr__ = short_repr
    count: int = 0
    total_us: float = 0.0
    by_span: dict[str, int] = field(default_factory=dict)  # span -> compiles, most first
    by_graph_hash: dict[str, int] = field(default_factory=dict)  # graph hash -> compiles, most first
    recompiled_spans: dict[str, int] = field(default_factory=dict)  # span -> distinct graphs (> 1)
    # torch_xla's most frequent (cause, user line) per span, where a debug file was joined
    trigger_by_span: dict[str, CompileTrigger] = field(default_factory=dict)
    by_source: dict[str, int] = field(default_factory=dict)  # "file:line" -> compiles
    graphs_by_source: dict[str, int] = field(default_factory=dict)  # "file:line" -> distinct graphs
    events: list = field(default_factory=list)  # every compile (a tables.Table of CompileRecord rows with worker)

    def to_pandas(self):
        """Every compile as a DataFrame row (worker, start_us, dur_us, graph_hash, span, source, ...)."""
        return self.events.to_pandas()


def compile_records(host: HostActivity, debug: DebugInfo | None = None) -> list[CompileRecord]:
    records = []
    compiles = host.compiles
    lines = compiles.line.astype(np.int64)
    spans = host.spans_at(lines, compiles.start)
    stacks = host.compile_stack
    for i in range(len(compiles)):
        name, source = host.spans.label(int(spans[i]))
        if stacks[i] >= 0:
            source = host.stacks.stacks[stacks[i]].source or source
        graph_hash = host.compile_hashes[i] if i < len(host.compile_hashes) else None
        info = debug.get(graph_hash) if debug else None
        records.append(CompileRecord(float(compiles.start[i]), float(compiles.end[i] - compiles.start[i]),
                                     graph_hash, name, source,
                                     info.compile_cause if info else None, info.user_frame if info else None))
    return records


def summarize_compiles(records: list[CompileRecord], workers: list[str]) -> CompileSummary:
    by_span = Counter(r.span or NO_SPAN for r in records)
    hashes_by_span: dict[str, set] = defaultdict(set)
    hashes_by_source: dict[str, set] = defaultdict(set)
    for r in records:
        if r.cause not in EDGE_COMPILE_CAUSES:  # their graphs are unknown
            hashes_by_span[r.span or NO_SPAN].add(r.graph_hash or f"#{r.start_us}")
            if r.source:
                hashes_by_source[r.source].add(r.graph_hash or f"#{r.start_us}")
    recompiled = {span: len(h) for span, h in hashes_by_span.items() if len(h) > 1}
    triggers: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        if r.cause or r.trigger:
            triggers[r.span or NO_SPAN][(r.cause, r.trigger)] += 1
    return CompileSummary(
        count=len(records),
        total_us=float(sum(r.dur_us for r in records)),
        by_span=dict(by_span.most_common()),
        by_graph_hash=dict(Counter(r.graph_hash for r in records if r.graph_hash).most_common()),
        recompiled_spans=dict(sorted(recompiled.items(), key=lambda kv: -kv[1])),
        trigger_by_span={span: CompileTrigger(c, t, n)
                         for span, counter in triggers.items() for (c, t), n in counter.most_common(1)},
        by_source=dict(Counter(r.source for r in records if r.source)),
        graphs_by_source={source: len(h) for source, h in hashes_by_source.items()},
        events=Table((dict(asdict(r), worker=worker) for r, worker in zip(records, workers)),
                     ("worker",) + columns_of(CompileRecord)),
    )
