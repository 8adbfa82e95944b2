"""torch_xla metrics of a worker over the capture window, from the snapshots in the capture.

Contract: ``collectors`` (the worker side) emits ``xlaprof.metrics`` events while a capture is
recording, each carrying counters and metric totals as stats (``<name>`` for a counter,
``<name>.count`` / ``<name>.total`` for a metric). ``window_metrics(plane)`` returns a
``MetricsDelta``: the last snapshot minus the first (what happened during the window), the
``aten::`` CPU-fallback counters among them, the graphs compiled before the window
(``compiles_before``), and the worker's facts (torch_xla version, debug file). ``None`` when
the worker emitted no snapshot (it did not use ``xlaprof.start_server``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import Plane

# .item() and friends count as aten::_local_scalar_dense: a blocking read, reported as such, not
# as an op without an XLA lowering.
NOT_FALLBACKS = frozenset({"aten::_local_scalar_dense"})
# The process's graph compiles so far: torch_xla's compile-time metric, or its counter.
COMPILE_COUNTS = ("CompileTime.count", "UncachedCompile")


@dataclass
class MetricsDelta:
    snapshots: int  # how many snapshots the capture holds
    span_us: float  # time between the first and last snapshot
    delta: dict[str, float]  # last - first, per key
    last: dict[str, float]  # the last snapshot (totals since the worker started)
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def fallbacks(self) -> dict[str, float]:
        """``aten::`` ops that ran on the CPU during the window (falling back to totals)."""
        pick = lambda counts: {k: v for k, v in counts.items()  # noqa: E731
                               if k.startswith("aten::") and k not in NOT_FALLBACKS and v}
        return pick(self.delta) or pick(self.last)

    @property
    def compiles_before(self) -> int | None:
        """Graphs the process had compiled before the window (at its first snapshot); None when
        the snapshots do not count compiles."""
        key = next((k for k in COMPILE_COUNTS if k in self.last), None)
        return int(self.last[key] - self.delta.get(key, 0.0)) if key else None

    @property
    def compiles_in_window(self) -> int | None:
        """Graphs compiled between the first and last snapshot; None when the snapshots do not
        count compiles."""
        key = next((k for k in COMPILE_COUNTS if k in self.last), None)
        return int(self.delta.get(key, 0.0)) if key else None

    def to_json(self) -> dict:
        return {"snapshots": self.snapshots, "span_us": self.span_us, "delta": self.delta,
                "last": self.last, "fallbacks": self.fallbacks, "facts": self.facts}


def window_metrics(plane: Plane | None) -> MetricsDelta | None:
    if plane is None:
        return None
    rows = plane.rows_named({vocabulary.METRICS_EVENT})
    if rows.size == 0:
        return None
    rows = rows[np.argsort(plane.events.start_us[rows], kind="stable")]
    first, last = plane.stats.of_event(int(rows[0])), plane.stats.of_event(int(rows[-1]))
    facts = {k: last[k] for k in vocabulary.FACT_KEYS if k in last}
    numbers = lambda snap: {k: float(v) for k, v in snap.items()  # noqa: E731
                            if k not in vocabulary.FACT_KEYS and isinstance(v, (int, float))}
    first_n, last_n = numbers(first), numbers(last)
    delta = {k: v - first_n.get(k, 0.0) for k, v in last_n.items()}
    span = float(plane.events.start_us[rows[-1]] - plane.events.start_us[rows[0]])
    return MetricsDelta(int(rows.size), span, delta, last_n, facts)
