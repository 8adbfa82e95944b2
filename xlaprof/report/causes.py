"""How every report names and colours an idle cause: one row per cause, and nowhere else.

Contract: a cause is named by its value everywhere (``transfer_from_device``: the README's table,
the JSON, the text report, the dashboard's legends, cards and grids); ``CAUSE_ROWS`` holds per
value its one human meaning (what the host was doing while the device waited, shown beside the
name where there is room: hovers, tooltips, the report's cause table) and its colour (the same on
every figure). A cause added to ``attribution.Cause`` needs one row here (a unit test checks every
cause has one); ``cause_row(value)`` answers a value without a row with a neutral grey and no
meaning rather than failing, so the reports keep working while a row is missing.
``finding_cost(lost_us, busy_added_us)`` is how a finding's cost reads ("2.1 ms lost + 1.3 ms device
time added": the idle time, and for reads the device time they added).
``idle_causes()`` is the values of ``attribution.CAUSES``, highest priority first (the order of
legends and tables). ``CAUSE_OF_FINDING`` is the colour key of a finding kind: its cause, or the
kind itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.units import format_duration


@dataclass(frozen=True)
class CauseRow:
    meaning: str  # what the host was doing while the device waited
    color: str  # the cause's colour on every figure and in every grid


CAUSE_ROWS: dict[str, CauseRow] = {
    "compile": CauseRow("compiling a graph (a new shape, a new graph)", "#8e44ad"),
    "transfer_from_device": CauseRow("blocked in a read of a device value (.item(), print(t), ...)", "#e4572e"),
    "transfer_to_device": CauseRow("copying inputs to the device", "#2f80ed"),
    "host_tracing": CauseRow("running Python (the model, the optimizer, your loop) and tracing the graph",
                             "#f2b134"),
    "host_blocked": CauseRow("blocked outside torch (a sleep, a queue or DataLoader get, I/O, a lock)", "#8d6e63"),
    "unattributed": CauseRow("nothing recorded and no Python stack sampled", "#a0a4a8"),
}
UNKNOWN = CauseRow("", "#555555")


def cause_row(cause: str) -> CauseRow:
    return CAUSE_ROWS.get(getattr(cause, "value", cause), UNKNOWN)


def idle_causes() -> tuple[str, ...]:
    return tuple(c.value for c in reversed(CAUSES))


def titled(cause: str) -> str:
    """``cause: its meaning``, for a hover or a tooltip."""
    meaning = cause_row(cause).meaning
    return f"{cause}: {meaning}" if meaning else str(cause)


def finding_cost(lost_us: float, busy_added_us: float) -> str:
    added = f" + {format_duration(busy_added_us)} device time added" if busy_added_us else ""
    return f"{format_duration(lost_us)} lost{added}"
