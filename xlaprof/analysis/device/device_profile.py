"""Where device time goes: per compiled graph, per HLO instruction, and per Python line.

Contract: ``device_profile(workers)`` returns a ``DeviceProfile`` of the analysed workers:
- ``graphs``: one ``GraphProfile`` per (worker, program) that ran in the window: executions
  (module events, summed over devices), total and median device time, the user span that
  dispatched it most often, whether it was compiled in the window, and its ``ops``.
- ``GraphProfile.ops``: one ``OpStat`` per HLO instruction that ran as a device op: occurrences,
  total time, self time (the op's time minus the ops nested in it on the same line, as XProf's
  HLO stats count it), category (TPU: the op metadata's ``hlo_category``; else from the HLO:
  opcode, or "<kind> fusion") and source line (``XLA_HLO_DEBUG=1``).
  Op events are the TPU planes' ``XLA Ops`` lines, and on the CPU device the thunk events of the
  host plane that carry a ``program_id`` (each named after its HLO instruction).
- ``lines``: device self time by Python source line, over all graphs and workers, most first;
  ops without a source line are summed under ``NO_SOURCE``.
Times are microseconds of device time, summed over devices; ops are counted whole when they
start inside the worker's window. ``worker_graphs(w)`` is one worker's graphs (what a task on a
cluster sends back) and ``merge_profiles(parts)`` the profile made of them. ``device_ops(device,
executions, index)`` is one device's op events (rows of its plane) and their programs.
Memory: one device's op arrays at a time (about 50 bytes an op of that device at the peak: its rows,
program codes, times, the nesting walk's parents; 60 where its ops need sorting), found, windowed and
walked a block of ``events.SCAN_ROWS`` rows at a time.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.device.device_timeline import DeviceKind, DeviceTimeline
from xlaprof.analysis.device.programs import UNKNOWN
from xlaprof.hlo import HloModules
from xlaprof.xspace import vocabulary
from xlaprof.xspace.events import SCAN_ROWS, Plane

NO_SOURCE = "(no source line: run the worker with XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1)"


@dataclass
class OpStat:
    name: str  # the HLO instruction
    category: str
    occurrences: int
    total_us: float
    self_us: float  # total minus nested ops
    source: str | None  # "file:line" of the Python code that created it


@dataclass
class GraphProfile:
    __repr__ = short_repr
    worker: str
    program_id: int
    module: str | None  # the HLO module's name
    executions: int  # module executions, summed over devices
    total_us: float
    median_us: float  # of one execution
    span: str | None  # the user span that dispatched it most often
    source: str | None  # that span's file:line
    compiled_in_window: bool
    graph_hash: str | None  # torch_xla's hash of the graph, where its compile was in the window
    ops: list[OpStat] = field(default_factory=list)  # by self time, most first

    @property
    def op_self_us(self) -> float:
        return sum(op.self_us for op in self.ops)


@dataclass
class LineTime:
    source: str  # "file:line", or NO_SOURCE
    self_us: float  # device self time of the ops it created
    ops: int  # distinct (graph, instruction) pairs


@dataclass
class DeviceProfile:
    __repr__ = short_repr
    graphs: list[GraphProfile]  # by total time, most first
    lines: list[LineTime]  # by time, most first

    def graph(self, worker: str, program_id: int) -> GraphProfile | None:
        return next((g for g in self.graphs if g.worker == worker and g.program_id == program_id), None)


def device_profile(workers: list) -> DeviceProfile:
    """``workers``: the ``WorkerAnalysis`` list of a ``SessionAnalysis``."""
    return merge_profiles([worker_graphs(w) for w in workers])


def merge_profiles(per_worker: list[list[GraphProfile]]) -> DeviceProfile:
    """The profile of a session from each worker's ``worker_graphs`` (in worker order)."""
    graphs = [g for part in per_worker for g in part]
    graphs.sort(key=lambda g: -g.total_us)
    return DeviceProfile(graphs, _lines(graphs))


def worker_graphs(w) -> list[GraphProfile]:
    """One worker's graphs with their ops (a ``WorkerAnalysis``)."""
    ex = w.programs
    lo, hi = w.window
    inside = (ex.start_us >= lo) & (ex.start_us < hi) & (ex.program != UNKNOWN)
    ops = _op_stats(w, lo, hi)
    compiled = {r.program_id: r.graph_hash for r in w.compiles if r.program_id is not None}
    graphs = []
    for program in np.unique(ex.program[inside]).tolist():
        mine = inside & (ex.program == program)
        spans = Counter(w.host.spans.label(span) for span in ex.span[mine].tolist())
        span_name, span_source = spans.most_common(1)[0][0]
        graphs.append(GraphProfile(
            w.worker.label, program, w.hlo.name(program), int(mine.sum()), float(ex.dur_us[mine].sum()),
            float(np.median(ex.dur_us[mine])), span_name, span_source, program in compiled, compiled.get(program),
            sorted(ops.get(program, []), key=lambda o: -o.self_us)))
    return graphs


def _op_stats(w, lo: float, hi: float) -> dict[int, list[OpStat]]:
    """program id -> its ops, over the worker's devices (one device's op arrays alive at a time)."""
    found: dict[int, list[OpStat]] = defaultdict(list)
    for d, device in enumerate(w.devices):
        plane = device.plane
        placed = device_ops(device, w.programs, d)
        rows, code = _in_window(plane, *placed[:2], lo, hi)
        if not rows.size:
            continue
        ids, ev, n_names = placed[2], plane.events, len(plane.names)
        del placed
        dur = ev.dur_us[rows]
        self_us = dur - _children_time(ev.line[rows], ev.start_us[rows], dur)
        # One integer key per (program, name), in (program id, name) order: program code times the name count.
        key = code.astype(np.int64) * n_names + ev.name[rows]
        del rows, code
        keys, counts, totals, selfs = _sums_by_key(key, ids.size * n_names, dur, self_us)
        for k, (index, name_index) in enumerate(zip(*divmod(keys, n_names))):
            program = int(ids[index])
            found[program].append(_op(w.hlo, plane, program, int(name_index), int(counts[k]), float(totals[k]),
                                      float(selfs[k])))
    return _merge_devices(found)


def device_ops(device: DeviceTimeline, executions, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``device``'s op events (``index``: its place in the worker's devices) as (rows of its plane,
    each op's program code, -1 unknown, and the sorted program ids the codes index): the CPU
    device's thunks, an accelerator's ``XLA Ops``."""
    if device.kind is DeviceKind.CPU:
        column = device.plane.int_column(vocabulary.PROGRAM_ID_STAT)
        ids = np.unique(column.values[column.values != UNKNOWN])
        return column.rows, _codes(ids, column.values), ids
    return _tpu_ops(device.plane, executions, index)


def _codes(ids: np.ndarray, programs: np.ndarray) -> np.ndarray:
    """Per program id, its index in the sorted ``ids`` (int32), -1 for UNKNOWN."""
    return np.where(programs == UNKNOWN, -1, np.searchsorted(ids, programs)).astype(np.int32)


def _in_window(plane: Plane, rows: np.ndarray, code: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The ops starting in [lo, hi) whose program is known: (rows, program codes)."""
    keep = np.empty(rows.size, bool)
    for at in range(0, rows.size, SCAN_ROWS):
        block = slice(at, at + SCAN_ROWS)
        start = plane.events.start_us[rows[block]]
        keep[block] = (start >= lo) & (start < hi) & (code[block] >= 0)
    return rows[keep], code[keep]


def _sums_by_key(key: np.ndarray, bins: int, dur: np.ndarray, self_us: np.ndarray):
    """(distinct keys ascending, count, summed dur, summed self time per key), each key's sums
    added in row order; by a bin per possible key where there are no more of them than rows."""
    if bins <= key.size:
        counts = np.bincount(key, minlength=bins)
        keys = np.flatnonzero(counts)
        return (keys, counts[keys], np.bincount(key, weights=dur, minlength=bins)[keys],
                np.bincount(key, weights=self_us, minlength=bins)[keys])
    keys, inverse = np.unique(key, return_inverse=True)
    return keys, np.bincount(inverse), np.bincount(inverse, weights=dur), np.bincount(inverse, weights=self_us)


def _op(modules: HloModules, plane: Plane, program: int, name_index: int, count: int, total: float,
        self_us: float) -> OpStat:
    name = plane.names[name_index]
    module = modules.get(program)
    instruction = module.instruction(name) if module is not None else None
    category = plane.metadata_stats.get(name_index, {}).get(vocabulary.HLO_CATEGORY_STAT)
    if not isinstance(category, str):
        category = instruction.category if instruction is not None else "unknown"
    return OpStat(name, category, count, total, self_us, instruction.source if instruction is not None else None)


def _merge_devices(found: dict[int, list[OpStat]]) -> dict[int, list[OpStat]]:
    """One OpStat per (program, op name), summing the devices' planes."""
    merged: dict[int, list[OpStat]] = {}
    for program, stats in found.items():
        by_name: dict[str, OpStat] = {}
        for s in stats:
            have = by_name.get(s.name)
            if have is None:
                by_name[s.name] = OpStat(s.name, s.category, s.occurrences, s.total_us, s.self_us, s.source)
            else:
                have.occurrences += s.occurrences
                have.total_us += s.total_us
                have.self_us += s.self_us
        merged[program] = list(by_name.values())
    return merged


def _tpu_ops(plane: Plane, executions, device: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``XLA Ops`` rows of a device plane, each op's program code (-1: unknown) and the program
    ids the codes index (sorted): from the op's metadata ``program_id``, else the module execution
    holding it."""
    by_name = np.full(len(plane.names), UNKNOWN, np.int64)
    for index, stats in plane.metadata_stats.items():
        value = stats.get(vocabulary.PROGRAM_ID_STAT)
        if isinstance(value, int):
            by_name[index] = value
    mine = executions.device == device
    run_program = executions.program[mine]
    if (by_name == UNKNOWN).all() and (run_program == UNKNOWN).all():
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int64)  # no op can be placed
    ids = np.unique(np.concatenate((by_name, run_program)))
    ids = ids[ids != UNKNOWN]
    rows = plane.rows_on_lines(plane.line_ids_where(lambda name: name == vocabulary.XLA_OPS_LINE))
    code = _codes(ids, by_name)[plane.events.name[rows]]
    run_code = _codes(ids, run_program)
    starts, ends = executions.start_us[mine], executions.start_us[mine] + executions.dur_us[mine]
    for at in range(0, rows.size, SCAN_ROWS):
        block = code[at:at + SCAN_ROWS]  # a view: filled in place
        missing = np.flatnonzero(block < 0)
        if not missing.size:
            continue
        op_start = plane.events.start_us[rows[at:at + SCAN_ROWS][missing]]
        run = np.searchsorted(starts, op_start, side="right") - 1
        held = (run >= 0) & (op_start < ends[np.maximum(run, 0)])
        block[missing[held]] = run_code[run[held]]
    return rows, code, ids


def _children_time(line: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Per event, the summed duration of the events directly nested in it on its line."""
    n = start.size
    end = start + dur
    # Sorted by line, start, then longest first (the order ops are recorded in, mostly: then no sort).
    order = None if _in_order(line, start, end) else np.lexsort((-end, start, line))
    s_end, s_line = (end, line) if order is None else (end[order], line[order])
    del end
    # Each event's parent is the nearest earlier event (in start order) on its line that ends no
    # earlier; pointer jumping walks the candidates back without a Python loop per event. A pointer
    # only ever skips events that cannot be the parent, so updating them a block at a time (each
    # block seeing the blocks before it) finds the same parents in bounded temporaries.
    parent = np.arange(-1, n - 1)  # intp: numpy indexes with int32 arrays by converting them first
    firsts = np.flatnonzero(np.r_[True, s_line[1:] != s_line[:-1]])
    del s_line
    parent[firsts] = -1
    _mark_outermost(parent, s_end, firsts)
    live = np.flatnonzero(parent >= 0)
    while live.size:
        still = []
        for at in range(0, live.size, SCAN_ROWS):
            part = live[at:at + SCAN_ROWS]
            part = part[s_end[parent[part]] < s_end[part]]
            parent[part] = parent[parent[part]]
            still.append(part[parent[part] >= 0])
        live = np.concatenate(still)
        del still
    del s_end
    children = np.zeros(n)
    has = parent >= 0
    np.add.at(children, parent[has], dur[has] if order is None else dur[order[has]])
    if order is None:
        return children
    result = np.empty(n)
    result[order] = children
    return result


def _mark_outermost(parent: np.ndarray, s_end: np.ndarray, firsts: np.ndarray) -> None:
    """No parent (-1) for each event ending later than every earlier event of its line (the
    outermost ops, most of a line's): the walk is left only the nested ones. A block at a time."""
    for lo, hi in zip(firsts.tolist(), np.append(firsts[1:], s_end.size).tolist()):
        latest = -np.inf  # the latest end before the block, on this line
        for at in range(lo, hi, SCAN_ROWS):
            ends = s_end[at:min(at + SCAN_ROWS, hi)]
            before = np.maximum.accumulate(ends)
            outermost = ends > np.maximum(np.r_[latest, before[:-1]], latest)
            parent[at:at + ends.size][outermost] = -1
            latest = max(latest, float(before[-1]))


def _in_order(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """Whether the events are sorted by line, then start, then end descending (checked in blocks)."""
    for at in range(0, line.size - 1, SCAN_ROWS):
        block = slice(at, at + SCAN_ROWS + 1)  # each block overlaps the next by one event
        ln, st, en = line[block], start[block], end[block]
        same_line, same_start = ln[1:] == ln[:-1], st[1:] == st[:-1]
        if not np.all((ln[1:] > ln[:-1]) | same_line & ((st[1:] > st[:-1]) | same_start & (en[1:] <= en[:-1]))):
            return False
    return True


def _lines(graphs: list[GraphProfile]) -> list[LineTime]:
    time: dict[str, float] = defaultdict(float)
    ops: Counter[str] = Counter()
    for g in graphs:
        for op in g.ops:
            key = op.source or NO_SOURCE
            time[key] += op.self_us
            ops[key] += 1
    return sorted((LineTime(k, v, ops[k]) for k, v in time.items()), key=lambda x: -x.self_us)
