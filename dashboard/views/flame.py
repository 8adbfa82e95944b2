"""The idle flame graph: Python stacks weighted by the device idle time of the gap pieces they name.

Contract:
- ``idle_flame(analysis, max_nodes=MAX_NODES)`` returns a ``Flame``, a tree of frames drawn as an
  icicle (the outermost frames at the top). A node is one frame reached through its callers; its
  ``value`` is the idle time of every gap piece whose stack passes through it (``PyStack.to_source``:
  the outermost frame down to the piece's Python line), in integer nanoseconds of device time summed
  over devices and workers, so that a parent's value is exactly its own pieces plus its children's
  (what Plotly's ``branchvalues="total"`` needs). Nodes come parents first, under one root (``ROOT``)
  holding all idle time that has a Python line. At most ``max_nodes`` nodes: the largest frames are
  kept (with their callers), and the children a kept frame loses are summed into one node
  ("N smaller frames"). Where a frame's own line caused idle time beside its callees' (or caused it
  for more than one cause), that time gets a child per cause, "(compile at this line)". ``cause``
  is the cause of most of a node's time (its colour), ``by_cause`` the split. ``Flame.unplaced_us``
  is the idle time with no Python line (no stack was sampled, or only framework frames), which the
  graph cannot show; ``notes`` are the analysis' notes (why a worker has no stacks).
- A frame's ``id`` is its stack's frames joined by newlines, the text of the gaps table's hidden
  ``stack`` column: ``frame_filter(id)`` is the gaps grid filter that keeps the gaps under that frame
  (those whose stack is the frame's path or goes deeper; for a "at this line" node, the gaps whose
  stack ends at its frame), ``None`` for the root or a summed node.
  ``frame_gaps(gaps, id)`` is that filter as a bool per gap id (for the timeline's gap markers);
  ``frame_label(id)`` the frame's short label.
- ``Flame.top``: where the icicle opens, the deepest frame through which all the idle time passes
  (the callers every stack shares: ``<module>``, ``main``, the training loop), so that the levels
  shown are the ones where the time splits; Plotly's path bar leads back to the root.
- ``clicked_frame(click_data, current)``: the frame (or ``ROOT``) a Plotly click on the icicle or
  its path bar selects, as Plotly zooms to it. ``current`` is the icicle's top bar (the selected
  frame, else ``Flame.top``): a click on it zooms out, and selects its parent. ``None`` for
  anything that is not a click on a node.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dashboard.views.gap_table import GapColumns, gap_mask
from dashboard.views.stacks import short_frame
from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.units import format_duration

MAX_NODES = 400  # nodes drawn; smaller frames are summed into one node per caller
ROOT = "(all)"
OTHER = "(smaller frames)"  # the last frame of a summed node's id
HERE = {f"({c.value} at this line)": c.value for c in CAUSES}  # the last frame of a line's own time
SEPARATOR = "\n"  # between frames of a stack, as in the gaps table's stack column
NS = 1000  # integer nanoseconds per microsecond of idle time
_N = len(CAUSES)  # a cost vector: ns per cause, then pieces per cause


@dataclass
class FlameNode:
    id: str  # the frames from the outermost, joined by SEPARATOR; ROOT for the root
    parent: str  # the caller's id; "" for the root
    label: str  # what the box says: "train.py:57 log_loss"
    value: int  # ns of idle time of the pieces through this frame (its children included)
    cause: str  # the cause of most of that time
    by_cause: dict[str, int]  # cause -> ns, causes with time only
    pieces: int  # gap pieces through this frame
    frame: str  # the full "path:line function" of a frame; "" for the root and summed nodes

    @property
    def value_us(self) -> float:
        return self.value / NS


@dataclass
class Flame:
    nodes: list[FlameNode]  # parents first; empty when no idle time has a Python line
    unplaced_us: float  # idle time without a Python line
    notes: list[str] = field(default_factory=list)  # the analysis' notes on missing stacks
    summed: int = 0  # frames left out and summed into "smaller frames" nodes
    top: str = ROOT  # the node the icicle opens at: the deepest one all the idle time passes through

    def hover(self, node: FlameNode) -> str:
        total = self.nodes[0].value if self.nodes else 1
        lines = [node.frame or node.label,
                 f"idle {format_duration(node.value_us)} ({100 * node.value / max(total, 1):.1f}% of idle with a "
                 f"line), {node.pieces:,} gap piece(s)"]
        lines += [f"{cause}: {format_duration(ns / NS)}" for cause, ns in node.by_cause.items()]
        return "<br>".join(lines)


def idle_flame(analysis: SessionAnalysis, max_nodes: int = MAX_NODES) -> Flame:
    paths, unplaced_us = _path_costs(analysis)
    tree: dict[tuple[str, ...], np.ndarray] = {(): np.zeros(2 * _N, np.int64)}
    for path, cost in paths.items():
        for depth in range(len(path) + 1):
            tree.setdefault(path[:depth], np.zeros(2 * _N, np.int64))
            tree[path[:depth]] += cost
    callers = {path[:depth] for path in paths for depth in range(1, len(path))}
    for path, cost in paths.items():
        causes = np.flatnonzero(cost[:_N])
        if path in callers or causes.size > 1:  # the line's own time beside its callees', by cause
            for c in causes.tolist():
                here = np.zeros(2 * _N, np.int64)
                here[[c, _N + c]] = cost[[c, _N + c]]
                tree[path + (f"({CAUSES[c].value} at this line)",)] = here
    if len(tree) == 1:
        return Flame([], unplaced_us, list(analysis.notes))
    kept, others = _kept(tree, max(int(max_nodes), 2))
    nodes = [_node(path, tree[path]) for path in kept]
    for parent, dropped in others.items():
        cost = np.sum([tree[path] for path in dropped], axis=0)
        nodes.append(_node(parent + (OTHER,), cost, f"{len(dropped)} smaller frames"))
    return Flame(nodes, unplaced_us, list(analysis.notes), sum(len(d) for d in others.values()), _top(nodes))


def _top(nodes: list[FlameNode]) -> str:
    """Down from the root while a node's one child holds all its time and has children itself."""
    children: dict[str, list[FlameNode]] = {}
    for node in nodes:
        children.setdefault(node.parent, []).append(node)
    top = nodes[0]
    while len(children.get(top.id, [])) == 1:
        (child,) = children[top.id]
        if child.value != top.value or child.id not in children:
            break
        top = child
    return top.id


def _path_costs(analysis: SessionAnalysis) -> tuple[dict[tuple[str, ...], np.ndarray], float]:
    """Per stack path (outermost frame first) the cost vector of the pieces whose stack it is,
    and the idle time (us) of pieces without a path."""
    paths: dict[tuple[str, ...], np.ndarray] = {}
    unplaced_us = 0.0
    for w in analysis.workers:
        p, stacks = w.pieces, w.host.stacks.stacks
        has = p.stack >= 0
        unplaced_us += float(p.dur_us[~has].sum())
        keys, inverse = np.unique(p.stack[has] * _N + p.cause[has], return_inverse=True)
        ns = np.rint(np.bincount(inverse.reshape(-1), weights=p.dur_us[has] * NS)).astype(np.int64)
        counts = np.bincount(inverse.reshape(-1))
        for key, t, n in zip(keys.tolist(), ns.tolist(), counts.tolist()):
            path = stacks[key // _N].to_source
            if not path:
                unplaced_us += t / NS
                continue
            cost = paths.setdefault(path, np.zeros(2 * _N, np.int64))
            cost[key % _N] += t
            cost[_N + key % _N] += n
    return paths, unplaced_us


def _kept(tree: dict[tuple[str, ...], np.ndarray], max_nodes: int):
    """The nodes to draw, parents first, and per kept node the children it loses."""
    value = {path: int(cost[:_N].sum()) for path, cost in tree.items()}
    # A child never holds more than its parent, so in this order a parent comes before its children.
    order = sorted((p for p in tree if p), key=lambda p: (-value[p], len(p), p))
    count = min(len(order), max_nodes - 1)
    while True:
        kept = {()} | set(order[:count])
        others: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        for path in order[count:]:
            if path[:-1] in kept:
                others.setdefault(path[:-1], []).append(path)
        excess = 1 + count + len(others) - max_nodes
        if excess <= 0:
            return [()] + order[:count], others
        count = max(count - excess, 0)


def _node(path: tuple[str, ...], cost: np.ndarray, label: str | None = None) -> FlameNode:
    by_cause = {c.value: int(ns) for c, ns in zip(CAUSES, cost[:_N].tolist()) if ns > 0}
    cause = CAUSES[int(np.argmax(cost[:_N]))].value
    last = path[-1] if path else ""
    frame = last if label is None and last not in HERE else ""
    if label is None:
        label = short_frame(last) if frame else last.strip("()") if path else "all idle time with a Python line"
    parent = SEPARATOR.join(path[:-1]) if len(path) > 1 else ROOT if path else ""
    return FlameNode(SEPARATOR.join(path) if path else ROOT, parent, label, int(cost[:_N].sum()), cause, by_cause,
                     int(cost[_N:].sum()), frame)


def frame_filter(frame_id: str | None) -> dict | None:
    """The gaps grid's filter on its ``stack`` column that keeps the gaps under ``frame_id``."""
    if not frame_id or frame_id == ROOT:
        return None
    path, _, last = frame_id.rpartition(SEPARATOR)
    if last == OTHER:
        return None
    if last in HERE:  # the line's own gaps
        return {"filterType": "text", "type": "equals", "filter": path} if path else None
    return {"filterType": "text", "operator": "OR", "conditions": [
        {"filterType": "text", "type": "equals", "filter": frame_id},
        {"filterType": "text", "type": "startsWith", "filter": frame_id + SEPARATOR}]}


def frame_label(frame_id: str) -> str:
    """The short label of the frame a frame id selects: "train.py:57 log_loss"."""
    path, _, last = frame_id.rpartition(SEPARATOR)
    return short_frame(path.rpartition(SEPARATOR)[2]) + " (its own line)" if last in HERE else short_frame(last)


def frame_gaps(gaps: GapColumns, frame_id: str | None) -> np.ndarray | None:
    """Per gap id, whether the gap is under the frame (``frame_filter``); None: no frame, every gap."""
    wanted = frame_filter(frame_id)
    return gap_mask(gaps, {"stack": wanted})[0] if wanted is not None else None


def clicked_frame(click_data: object, current: str) -> str | None:
    points = click_data.get("points") if isinstance(click_data, dict) else None
    point = points[0] if isinstance(points, list) and points and isinstance(points[0], dict) else {}
    frame = point.get("id")
    if not isinstance(frame, str):
        return None
    if frame == current:  # the icicle's top bar: Plotly zooms out to its parent
        return frame.rpartition(SEPARATOR)[0] or ROOT
    return frame
