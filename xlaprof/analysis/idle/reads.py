"""Blocking reads of device values (TransferFromDevice): how many, how long, and in which span.

Contract: ``summarize_reads(host, slowed, rerun)`` gives one worker's ``ReadSummary``: TransferFromDevice count,
transfer time, blocked host time (the whole reading calls: the forced early execution, sync,
barrier wait and transfer, what an ``.item()`` costs the host), per-span counts (``NO_SPAN``
outside any span) and, where the worker's stacks were sampled, per-line counts (the reading
call's ``PyStack.source``: ``HostActivity.read_stack``); ``busy_added_us``, given each read's
``read_slowdown.busy_added`` and ``read_reruns`` (``summarize_reads(host, slowed, rerun)``): the
device time the reads added, to the work running during them and as the work of their early graphs
that later graphs ran again, in all, by line, and by span for the reads whose line is unknown; and
``rerun_us`` likewise, the second part alone. ``merge_reads`` sums workers'. Times in microseconds.
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
    busy_added_us: float = 0.0  # device time the reads added: work running during them slowed, or run again
    busy_added_by_span: dict[str, float] = field(default_factory=dict)  # span -> that time, reads without a line
    busy_added_by_source: dict[str, float] = field(default_factory=dict)  # "file:line" -> that time
    rerun_us: float = 0.0  # of busy_added_us, the reads' early graphs' work that later graphs ran again
    rerun_by_span: dict[str, float] = field(default_factory=dict)
    rerun_by_source: dict[str, float] = field(default_factory=dict)


def summarize_reads(host: HostActivity, slowed: np.ndarray, rerun: np.ndarray) -> ReadSummary:
    """Per read of ``host.transfers_from_device``: ``slowed``, the device time by which the work running
    during it took longer; ``rerun``, its early graph's device time that later graphs ran again."""
    added = slowed + rerun
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
        rerun_us=float(rerun.sum()),
        rerun_by_span=_sums([span if source is None else None for span, source in zip(spans, sources)], rerun),
        rerun_by_source=_sums(sources, rerun),
    )


def _sums(keys: list, values: np.ndarray) -> dict[str, float]:
    """value sums by key (None left out), largest first; keys whose sum is zero left out."""
    total: dict[str, float] = Counter()
    for key, value in zip(keys, values.tolist()):
        if key is not None and value > 0:
            total[key] += value
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def merge_reads(parts: list[ReadSummary]) -> ReadSummary:
    def merged(key: str) -> dict:
        total: Counter = Counter()
        for part in parts:
            total.update(getattr(part, key))
        return dict(total.most_common())
    return ReadSummary(sum(p.count for p in parts), sum(p.total_us for p in parts),
                       sum(p.blocked_us for p in parts), merged("by_span"), merged("by_source"),
                       sum(p.busy_added_us for p in parts), merged("busy_added_by_span"),
                       merged("busy_added_by_source"), sum(p.rerun_us for p in parts), merged("rerun_by_span"),
                       merged("rerun_by_source"))
