"""Blocking reads of device values (TransferFromDevice): how many, how long, and in which span.

Contract: ``summarize_reads(host, added)`` gives one worker's ``ReadSummary``: TransferFromDevice count,
transfer time, blocked host time (the whole reading calls: the forced early execution, sync,
barrier wait and transfer, what an ``.item()`` costs the host), per-span counts (``NO_SPAN``
outside any span) and, where the worker's stacks were sampled, per-line counts (the reading
call's ``PyStack.source``: ``HostActivity.read_stack``); ``busy_added_us``, given each read's
``read_slowdown.busy_added``: the device time the reads added to the work running during them, in
all, by line, and by span for the reads whose line is unknown. ``merge_reads`` sums workers'. Times in microseconds.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.host.host_activity import READ_SPAN_BEFORE_END_US, HostActivity
from xlaprof.analysis.host.span_index import NO_SPAN


@dataclass
class ReadSummary:
    count: int = 0
    total_us: float = 0.0  # time in the transfers themselves
    blocked_us: float = 0.0  # host time in the reading calls (forced execution, sync, wait, transfer)
    by_span: dict[str, int] = field(default_factory=dict)  # span -> reads, most first
    by_source: dict[str, int] = field(default_factory=dict)  # "file:line" -> reads, most first
    busy_added_us: float = 0.0  # device time the reads added to the work running during them
    busy_added_by_span: dict[str, float] = field(default_factory=dict)  # span -> that time, reads without a line
    busy_added_by_source: dict[str, float] = field(default_factory=dict)  # "file:line" -> that time


def summarize_reads(host: HostActivity, added: np.ndarray) -> ReadSummary:
    """``added``: per read of ``host.transfers_from_device``, the device time it added."""
    reads = host.transfers_from_device
    lines, inside = reads.line.astype(np.int64), reads.end - READ_SPAN_BEFORE_END_US
    spans = [host.spans.label(int(i))[0] or NO_SPAN for i in host.spans_at(lines, inside)]
    sources = [host.stacks.stacks[i].source if i >= 0 else None for i in host.read_stack.tolist()]
    by_source = Counter(sources)
    by_source.pop(None, None)
    return ReadSummary(
        count=len(reads),
        total_us=float(host.plane.events.dur_us[reads.rows].sum()) if len(reads) else 0.0,
        blocked_us=reads.total_us,
        by_span=dict(Counter(spans).most_common()),
        by_source=dict(by_source.most_common()),
        busy_added_us=float(added.sum()),
        busy_added_by_span=_sums([span if source is None else None for span, source in zip(spans, sources)], added),
        busy_added_by_source=_sums(sources, added),
    )


def _sums(keys: list, values: np.ndarray) -> dict[str, float]:
    """value sums by key (None left out), largest first; keys whose sum is zero left out."""
    total: dict[str, float] = Counter()
    for key, value in zip(keys, values.tolist()):
        if key is not None and value > 0:
            total[key] += value
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def merge_reads(parts: list[ReadSummary]) -> ReadSummary:
    by_span: Counter = Counter()
    by_source: Counter = Counter()
    added_by_span: Counter = Counter()
    added_by_source: Counter = Counter()
    for part in parts:
        by_span.update(part.by_span)
        by_source.update(part.by_source)
        added_by_span.update(part.busy_added_by_span)
        added_by_source.update(part.busy_added_by_source)
    return ReadSummary(sum(p.count for p in parts), sum(p.total_us for p in parts),
                       sum(p.blocked_us for p in parts), dict(by_span.most_common()), dict(by_source.most_common()),
                       sum(p.busy_added_us for p in parts), dict(added_by_span.most_common()),
                       dict(added_by_source.most_common()))
