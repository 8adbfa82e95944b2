"""Everything the reader gives for a capture, as plain values: ``columns(space)``, to compare two
ways of reading the same file (whole or in pieces) exactly."""
from __future__ import annotations


def columns(space) -> list:
    """Everything the reader gives, plane by plane, as plain values."""
    return [(p.name, p.lines, p.names, p.events.line.tolist(), p.events.name.tolist(), p.events.start_us.tolist(),
             p.events.dur_us.tolist(), p.stats.keys, p.stats.event.tolist(), p.stats.key.tolist(), p.stats.value,
             {k: (c.rows.tolist(), c.values.tolist()) for k, c in p.int_columns.items()}, p.metadata_stats,
             p.metadata_ids.tolist(), p.plane_stats) for p in space.planes]
