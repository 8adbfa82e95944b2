"""Blocking reads of device values (TransferFromDevice): how many, how long, and in which span.

Contract: ``summarize_reads(host)`` gives one worker's ``ReadSummary``: TransferFromDevice count,
transfer time, blocked host time (the whole reading calls: the forced early execution, sync,
barrier wait and transfer, what an ``.item()`` costs the host), per-span counts (``NO_SPAN``
outside any span) and, where the worker's stacks were sampled, per-line counts (the reading
call's ``PyStack.source``: ``HostActivity.read_stack``). ``merge_reads`` sums workers'. Times in
microseconds.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.host_activity import READ_SPAN_BEFORE_END_US, HostActivity
from xlaprof.analysis.span_index import NO_SPAN


@dataclass
class ReadSummary:
    count: int = 0
    total_us: float = 0.0  # time in the transfers themselves
    blocked_us: float = 0.0  # host time in the reading calls (forced execution, sync, wait, transfer)
    by_span: dict[str, int] = field(default_factory=dict)  # span -> reads, most first
    by_source: dict[str, int] = field(default_factory=dict)  # "file:line" -> reads, most first


def summarize_reads(host: HostActivity) -> ReadSummary:
    reads = host.transfers_from_device
    lines, inside = reads.line.astype(np.int64), reads.end - READ_SPAN_BEFORE_END_US
    by_span = Counter(host.spans.label(int(i))[0] or NO_SPAN for i in host.spans_at(lines, inside))
    by_source = Counter(host.stacks.stacks[i].source for i in host.read_stack.tolist() if i >= 0)
    by_source.pop(None, None)
    return ReadSummary(
        count=len(reads),
        total_us=float(host.plane.events.dur_us[reads.rows].sum()) if len(reads) else 0.0,
        blocked_us=reads.total_us,
        by_span=dict(by_span.most_common()),
        by_source=dict(by_source.most_common()),
    )


def merge_reads(parts: list[ReadSummary]) -> ReadSummary:
    by_span: Counter = Counter()
    by_source: Counter = Counter()
    for part in parts:
        by_span.update(part.by_span)
        by_source.update(part.by_source)
    return ReadSummary(sum(p.count for p in parts), sum(p.total_us for p in parts),
                       sum(p.blocked_us for p in parts), dict(by_span.most_common()), dict(by_source.most_common()))
