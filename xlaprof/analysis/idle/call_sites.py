"""Idle time inside a library call, grouped where the user fixes it: at the user's call.

Contract: ``group_at_call_sites(costs)`` returns ``costs`` with those whose line lies in a
third-party library (``framework_files.is_library_file``) merged per (cause, span, call site):
the call site is the innermost frame of the cost's stack in the user's own code
(``PyStack.call_site_index``: neither framework nor library, not at a ``def`` or decorator line),
e.g. ``denoise.py:36 sched.step(...)``. A merged cost names the call site as its ``source``, its stack runs down to it, its time and pieces are the sums, and ``inside`` lists the
library lines behind it (``LibraryLine``: line, text, pieces, idle time), costliest first. A cost
with no user frame above its line (a library's own thread) stays as it is, as do the costs of the
user's own lines.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from xlaprof.analysis.host.frames import line_text, parse_stack
from xlaprof.analysis.idle.idle_costs import CauseCost
from xlaprof.framework_files import is_library_file


@dataclass(frozen=True)
class LibraryLine:
    source: str  # "file:line" inside the library
    code: str | None  # its text, when the file is readable here
    pieces: int  # gap pieces (for reads: reads) behind it
    lost_us: float


def group_at_call_sites(costs: list[CauseCost]) -> list[CauseCost]:
    kept: list[CauseCost] = []
    groups: dict[tuple, list[tuple[CauseCost, tuple[str, ...]]]] = {}
    for cost in costs:
        site = _call_site(cost) if cost.source and is_library_file(cost.source) else None
        if site is None:
            kept.append(cost)
            continue
        groups.setdefault((cost.cause, cost.span, site[0]), []).append((cost, site[1]))
    for (_, _, site), members in groups.items():
        members.sort(key=lambda m: -m[0].lost_us)
        first, stack = members[0]
        inside = tuple(LibraryLine(c.source, line_text(c.source), c.pieces, c.lost_us) for c, _ in members)
        kept.append(replace(first, source=site, stack=stack, called_from=None, inside=inside,
                            lost_us=sum(c.lost_us for c, _ in members), pieces=sum(c.pieces for c, _ in members),
                            workers=tuple(dict.fromkeys(w for c, _ in members for w in c.workers))))
    return kept


def _call_site(cost: CauseCost) -> tuple[str, tuple[str, ...]] | None:
    """The innermost user frame of the cost's stack, and the stack down to it; None without one."""
    stack = parse_stack("\n".join(cost.stack))
    i = stack.call_site_index
    return (stack.frames[i].location, tuple(cost.stack[: i + 1])) if i >= 0 else None
