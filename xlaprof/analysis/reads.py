"""Blocking reads of device values (TransferFromDevice): how many, how long, and in which span.

Contract: ``summarize_reads(host)`` gives one worker's ``ReadSummary``: TransferFromDevice count,
transfer time, blocked host time (the barrier wait plus the transfer: what an ``.item()`` costs
the host) and per-span counts (``NO_SPAN`` outside any span). ``merge_reads`` sums workers'.
Times in microseconds.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.host_activity import HostActivity
from xlaprof.analysis.span_index import NO_SPAN


@dataclass
class ReadSummary:
    count: int = 0
    total_us: float = 0.0  # time in the transfers themselves
    blocked_us: float = 0.0  # host time blocked: the barrier wait plus the transfer
    by_span: dict[str, int] = field(default_factory=dict)  # span -> reads, most first


def summarize_reads(host: HostActivity) -> ReadSummary:
    reads = host.transfers_from_device
    spans = host.spans_at(reads.line.astype(np.int64), reads.start)
    by_span = Counter(host.spans.label(int(i))[0] or NO_SPAN for i in spans)
    return ReadSummary(
        count=len(reads),
        total_us=float(host.plane.events.dur_us[reads.rows].sum()) if len(reads) else 0.0,
        blocked_us=reads.total_us,
        by_span=dict(by_span.most_common()),
    )


def merge_reads(parts: list[ReadSummary]) -> ReadSummary:
    by_span: Counter = Counter()
    for part in parts:
        by_span.update(part.by_span)
    return ReadSummary(sum(p.count for p in parts), sum(p.total_us for p in parts),
                       sum(p.blocked_us for p in parts),
                       dict(sorted(by_span.items(), key=lambda kv: -kv[1])))
