"""Synthetic XSpace captures with known content, for tests and benchmarks.

Contract:
- ``XSpaceBuilder`` builds an XSpace with our wire schema (``xspace_schema``): planes, lines,
  events given by name, start and duration in **microseconds since the profile start**, and
  stats given as keyword values (``str`` becomes a ``ref_value`` to an ``XStatMetadata`` named by
  the string, as the profiler stores TraceMe kwargs; ``int`` an ``int64_value``; ``float`` a
  ``double_value``; ``bytes`` a ``bytes_value``). ``task_environment`` adds the profile start/stop
  plane that real captures carry. Line timestamps are written relative to the profile start, as
  the profiler writes them, unless the builder is made with ``absolute_lines=True`` (then they
  are ns since the epoch). ``space`` is the message itself, for tests that corrupt it.
- ``training_capture(steps=..., devices=...)`` returns the bytes of a TPU-shaped training capture
  (see ``TrainingShape``) whose event count grows linearly with ``steps``:
  ``training_event_count`` gives it exactly, so a capture of any size can be asked for.
- ``write_session(logdir, run, captures, manifest)`` lays captures out as a session
  (``<logdir>/plugins/profile/<run>/<name>.xplane.pb`` + ``xlaprof.json``) and returns the run dir.
- ``write_before_after(logdir)`` writes two sessions of one job, ``before`` (a blocking read in
  ``log_loss`` every step) and ``after`` (the read removed, captured on another port), for the
  comparison's tests; returns their run dirs.
- ``varint(n)``: a protobuf varint, for wire bytes written by hand; ``write_wide_capture(path, events)``
  streams a capture of hundreds of MB or GBs to a file (bounded-memory tests and benchmarks).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from xlaprof.session import profile_root, write_manifest
from xlaprof.xspace import schema as xspace_schema
from xlaprof.xspace import vocabulary
from xlaprof.xspace.reader import (
    PROFILE_START_STAT,
    PROFILE_STOP_STAT,
    TASK_ENVIRONMENT_PLANE,
)

# An arbitrary but realistic profile start: 2024-01-01, ns since the epoch.
DEFAULT_START_NS = 1_704_067_200_000_000_000


def varint(n: int) -> bytes:
    """``n`` as a protobuf varint, for tests that encode wire bytes by hand."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _length_field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def write_wide_capture(path: str, events: int) -> int:
    """A capture of any size written as a stream, in blocks of 10,000 events (``events`` rounded
    down to them): a TPU plane of one line of ops, each with a 100-byte ``hlo_op`` stat (which the
    reader skips on device planes), about 120 bytes an event in the file, 24 in the reader's
    columns; each block repeats the first's times. Returns the file's size."""
    stat = xspace_schema.XStat(metadata_id=1, str_value="x" * 100)
    block = 10_000
    body = b"".join(_length_field(4, xspace_schema.XEvent(metadata_id=1, offset_ps=1000 * i, duration_ps=500,
                                                          stats=[stat]).SerializeToString()) for i in range(block))
    head = xspace_schema.XLine(id=1, name="XLA Ops", timestamp_ns=1000).SerializeToString()
    line_length = len(head) + len(body) * (events // block)
    metadata = xspace_schema.XPlane(name="/device:TPU:0")
    metadata.event_metadata[1].name = "fusion.1"
    metadata.stat_metadata[1].name = "hlo_op"
    tail = metadata.SerializeToString()
    line_field_head = varint(3 << 3 | 2) + varint(line_length)
    plane_length = len(line_field_head) + line_length + len(tail)
    with open(path, "wb") as handle:
        handle.write(varint(1 << 3 | 2) + varint(plane_length) + line_field_head + head)
        handle.writelines(body for _ in range(events // block))
        handle.write(tail)
    return os.path.getsize(path)


def _intern(ids: dict[str, int], metadata, name: str) -> int:
    """The id of ``name`` in a plane's metadata map, adding an entry the first time."""
    found = ids.get(name)
    if found is None:
        # Ids start at 1: the profiler reserves 0 for "no metadata".
        found = ids[name] = len(metadata) + 1
        metadata[found].id = found
        metadata[found].name = name
    return found


class PlaneBuilder:
    """One XPlane: interns event and stat names into the plane's metadata maps."""

    def __init__(self, plane, line_base_ns: int) -> None:
        self.plane = plane
        self._line_base_ns = line_base_ns
        self._event_ids: dict[str, int] = {}
        self._keyed_ids: dict[tuple, int] = {}
        self._stat_ids: dict[str, int] = {}

    def event_id(self, name: str, metadata: dict | None = None) -> int:
        """The metadata id of ``name``; with ``metadata`` (stats of the event metadata, as a TPU
        op's ``program_id``) one entry per distinct (name, metadata)."""
        if not metadata:
            return _intern(self._event_ids, self.plane.event_metadata, name)
        key = (name, tuple(sorted(metadata.items())))
        found = self._keyed_ids.get(key)
        if found is None:
            found = self._keyed_ids[key] = len(self.plane.event_metadata) + 1
            entry = self.plane.event_metadata[found]
            entry.id, entry.name = found, name
            for stat, value in metadata.items():
                self.set_stat(entry.stats.add(), stat, value)
        return found

    def metadata_event(self, metadata_id: int, name: str, **stats) -> None:
        """An event metadata entry with a chosen id and stats (the ``/host:metadata`` records)."""
        entry = self.plane.event_metadata[metadata_id]
        entry.id, entry.name = metadata_id, name
        for stat, value in stats.items():
            self.set_stat(entry.stats.add(), stat, value)

    def stat_id(self, name: str) -> int:
        return _intern(self._stat_ids, self.plane.stat_metadata, name)

    def set_stat(self, stat, key: str, value) -> None:
        stat.metadata_id = self.stat_id(key)
        if isinstance(value, str):
            stat.ref_value = self.stat_id(value)
        elif isinstance(value, bool | int):
            stat.int64_value = int(value)
        elif isinstance(value, float):
            stat.double_value = value
        elif isinstance(value, bytes):
            stat.bytes_value = value
        else:
            raise TypeError(f"stat {key!r}: unsupported value type {type(value).__name__}")

    def add_stat(self, key: str, value) -> None:
        """A stat of the plane itself."""
        self.set_stat(self.plane.stats.add(), key, value)

    def line(self, name: str, *, line_id: int | None = None, offset_ns: int = 0) -> LineBuilder:
        """A new line (thread); ``offset_ns`` places its timestamp after the profile start."""
        line = self.plane.lines.add()
        line.id = line_id if line_id is not None else len(self.plane.lines)
        line.name = name
        line.timestamp_ns = self._line_base_ns + offset_ns
        return LineBuilder(self, line, offset_ns)


class LineBuilder:
    def __init__(self, plane: PlaneBuilder, line, offset_ns: int) -> None:
        self.plane = plane
        self.line = line
        self._offset_ps = offset_ns * 1000

    def event(self, name: str, start_us: float, dur_us: float, *, metadata: dict | None = None, **stats) -> None:
        event = self.line.events.add(metadata_id=self.plane.event_id(name, metadata),
                                     offset_ps=round(start_us * 1e6) - self._offset_ps,
                                     duration_ps=round(dur_us * 1e6))
        for key, value in stats.items():
            self.plane.set_stat(event.stats.add(), key, value)

    def events(self, names: list[str], name_index: np.ndarray, start_us: np.ndarray,
               dur_us: np.ndarray) -> None:
        """Many stat-less events at once: ``names[name_index[i]]`` at ``start_us[i]``."""
        ids = [self.plane.event_id(n) for n in names]
        offsets = np.round(np.asarray(start_us) * 1e6).astype(np.int64) - self._offset_ps
        durations = np.round(np.asarray(dur_us) * 1e6).astype(np.int64)
        add = self.line.events.add
        for k, offset, duration in zip(name_index.tolist(), offsets.tolist(), durations.tolist()):
            add(metadata_id=ids[k], offset_ps=offset, duration_ps=duration)


class XSpaceBuilder:
    def __init__(self, *, start_ns: int = DEFAULT_START_NS, absolute_lines: bool = False,
                 hostnames: tuple[str, ...] = ("synthetic",)) -> None:
        self.space = xspace_schema.XSpace()
        self.space.hostnames.extend(hostnames)
        self.start_ns = start_ns
        self._line_base_ns = start_ns if absolute_lines else 0

    def plane(self, name: str) -> PlaneBuilder:
        plane = self.space.planes.add()
        plane.id = len(self.space.planes)
        plane.name = name
        return PlaneBuilder(plane, self._line_base_ns)

    def task_environment(self, duration_us: float) -> None:
        """The plane recording the profiled window [profile start, start + duration]."""
        env = self.plane(TASK_ENVIRONMENT_PLANE)
        env.add_stat(PROFILE_START_STAT, self.start_ns)
        env.add_stat(PROFILE_STOP_STAT, self.start_ns + round(duration_us * 1e3))

    def to_bytes(self) -> bytes:
        return self.space.SerializeToString()


@dataclass(frozen=True)
class TrainingShape:
    """Durations (us) of one synthetic training step; the host dispatches, devices execute."""

    transfer_to_device_us: float = 30.0  # input batch copy at the step's start
    forward_us: float = 400.0  # the user's forward span (Python + graph tracing)
    step_marker_us: float = 100.0  # StepMarker > SyncTensorsGraph: cutting and dispatching the graph
    compile_us: float = 5000.0  # XLAGraphExecutor::Compile, when the step compiles
    module_us: float = 1500.0  # one XLA module execution per device per step
    transfer_from_device_us: float = 20.0  # the copy after the barrier of a blocking read
    jitter_us: float = 50.0  # uniform noise on module time, per device and step (seeded)


HOST_EVENTS_PER_STEP = 5  # train_step, TransferToDevice, forward, StepMarker, SyncTensorsGraph
READ_EVENTS = 4  # log_loss, SyncTensorsGraphInternal, TensorCollectionBarrier, TransferFromDevice
COMPILE_EVENTS = 2  # XLAGraphExecutor::Compile > PjRtComputationClient::Compile
OP_NAMES = [f"{kind}.{i}" for i in range(8) for kind in ("fusion", "convolution", "all-reduce", "copy")]


@dataclass(frozen=True)
class StepProgram:
    """The compiled program a synthetic step runs (``training_capture(programs=...)``)."""

    program_id: int
    graph_hash: str
    hlo: bytes  # its HloProto (tests.support.hlo_builder)
    ops: tuple[tuple[str, str, float], ...]  # (HLO op name, category, share of the module's time), in order
    module: str = "SyncTensorsGraph.93"


OP_FILL = 0.9  # an op of a StepProgram fills this much of its share of the module


def _compiles_at(step: int, recompile_every: int, warm: bool = False) -> bool:
    return (step == 0 and not warm) or (recompile_every > 0 and step > 0 and step % recompile_every == 0)


def training_event_count(*, steps: int, devices: int = 4, ops_per_step: int = 50, read_every: int = 1,
                         recompile_every: int = 0, warm: bool = False) -> int:
    """The exact number of timeline events ``training_capture`` makes with these arguments."""
    host = steps * HOST_EVENTS_PER_STEP
    host += READ_EVENTS * sum(1 for s in range(steps) if read_every > 0 and s % read_every == 0)
    host += COMPILE_EVENTS * sum(1 for s in range(steps) if _compiles_at(s, recompile_every, warm))
    return host + steps * devices * (ops_per_step + 2)


def training_capture(*, steps: int, devices: int = 4, ops_per_step: int = 50, read_every: int = 1,
                     recompile_every: int = 0, seed: int = 0, shape: TrainingShape = TrainingShape(),
                     warm: bool = False, script: str = "train.py",
                     programs: list[StepProgram] | None = None, sampled: bool = False,
                     stack_lag_us: float = 0.0) -> bytes:
    """A TPU-shaped capture of ``steps`` training steps on ``devices`` chips.

    Host ``/host:CPU``, line ``python``, per step: ``train_step`` (step_num, source, _r=1) holding
    ``TransferToDevice``, ``forward`` (source), ``StepMarker`` > ``SyncTensorsGraph`` (with
    ``XLAGraphExecutor::Compile`` (graph_hash) > ``PjRtComputationClient::Compile`` on step 0 and
    every ``recompile_every`` steps, each a new graph; ``warm``: not on step 0, the graph was compiled
    before the capture), and every ``read_every`` steps
    ``log_loss`` (source) > ``SyncTensorsGraphInternal`` > ``TensorCollectionBarrier``, which waits
    for the devices to finish the step, then ``TransferFromDevice``. Devices ``/device:TPU:N`` run one
    module per step once it is dispatched and the previous one is done: ``XLA Modules`` (one event),
    ``XLA Ops`` (``ops_per_step`` ops tiling the module), ``Steps`` (one event). Span sources are
    lines of ``script`` (``train.py:30`` for ``train_step``, ``:42`` ``forward``, ``:57`` ``log_loss``).

    With ``programs`` (one ``StepProgram`` per step) each step runs its program instead: it
    compiles where the program is new, dispatches it (``ExecuteComputation`` inside the
    ``StepMarker``), and the devices run ``<module>(<program id>)`` whose ``XLA Ops`` are the
    program's ops (each ``share * OP_FILL`` of the module, their metadata carrying
    ``program_id``, ``symbol_id`` and ``hlo_category`` as on a TPU); ``/host:metadata`` records
    every program's HLO. (``training_event_count`` does not count these captures.)

    ``sampled``: the stack sampler's events too, on the line "py MainThread" (see
    ``sampled_stacks``): ``SAMPLED_STACKS["step"]`` through each step, ``["forward"]`` while
    ``forward`` runs and ``["read"]`` from the read's start to its transfer's end; each event
    recorded ``stack_lag_us`` after its run (``add_stack_samples``).
    """
    rng = np.random.default_rng(seed)
    builder = XSpaceBuilder()
    host = builder.plane(vocabulary.HOST_PLANE)
    python = host.line("python", line_id=1)
    samples: list[tuple[float, float, str]] = []  # (start, end, stack) of the forward and read runs
    tpus = [builder.plane(f"/device:TPU:{d}") for d in range(devices)]
    modules = [tpu.line("XLA Modules", line_id=1) for tpu in tpus]
    op_lines = [tpu.line("XLA Ops", line_id=2) for tpu in tpus]
    step_lines = [tpu.line("Steps", line_id=3) for tpu in tpus]

    jitter = rng.uniform(0.0, shape.jitter_us, size=(steps, devices))
    # Module starts and durations per (step, device), filled as the host dispatches.
    mod_start = np.zeros((steps, devices))
    mod_dur = shape.module_us + jitter
    device_free = np.zeros(devices)
    graph = 0
    t = 10.0
    for step in range(steps):
        step_start = t
        t += 5.0
        python.event("PjRtComputationClient::TransferToDevice", t, shape.transfer_to_device_us)
        t += shape.transfer_to_device_us + 5.0
        python.event("forward", t, shape.forward_us, source=f"{script}:42")
        samples.append((t, t + shape.forward_us, "forward"))
        t += shape.forward_us + 5.0
        marker = shape.step_marker_us
        if programs:
            compiling = programs[step].program_id not in {p.program_id for p in programs[:step]}
        else:
            compiling = _compiles_at(step, recompile_every, warm)
        if compiling:
            graph += 1
            marker += shape.compile_us
        python.event("StepMarker", t, marker)
        python.event("SyncTensorsGraph", t + 2.0, marker - 4.0)
        if compiling:
            python.event("XLAGraphExecutor::Compile", t + 10.0, shape.compile_us,
                         graph_hash=programs[step].graph_hash if programs else f"{graph:032x}")
            python.event("PjRtComputationClient::Compile", t + 20.0, shape.compile_us - 20.0)
        if programs:
            python.event("PjRtComputationClient::ExecuteComputation", t + marker - 3.0, 1.0)
        t += marker
        mod_start[step] = np.maximum(device_free, t + 5.0)
        device_free = mod_start[step] + mod_dur[step]
        if read_every > 0 and step % read_every == 0:
            read_start = t + 5.0
            barrier_end = max(float(device_free.max()), read_start + 10.0) + 1.0
            transfer_end = barrier_end + 2.0 + shape.transfer_from_device_us
            python.event("log_loss", read_start, transfer_end + 3.0 - read_start, source=f"{script}:57")
            python.event("SyncTensorsGraphInternal", read_start + 1.0, barrier_end - read_start - 1.0)
            python.event("TensorCollectionBarrier", read_start + 4.0, barrier_end - read_start - 4.0)
            python.event("PjRtComputationClient::TransferFromDevice", barrier_end + 2.0,
                         shape.transfer_from_device_us)
            samples.append((read_start, transfer_end, "read"))
            t = transfer_end + 3.0
        t += 5.0
        python.event("train_step", step_start, t - step_start, step_num=step, source=f"{script}:30", _r=1)
        samples.append((step_start, t, "step"))
        t += 5.0
    if sampled:
        add_stack_samples(host, thread_line_id=1, runs=samples, stacks=sampled_stacks(script), lag_us=stack_lag_us)
    if programs:
        _program_lines(builder, modules, op_lines, step_lines, mod_start, mod_dur, programs)
    else:
        _device_lines(modules, op_lines, step_lines, mod_start, mod_dur, ops_per_step, rng)
    builder.task_environment(max(t, float(device_free.max())) + 10.0)
    return builder.to_bytes()


SAMPLED_LIB = "/venv/lib/python3.11/site-packages/torch/_tensor.py"


def sampled_stacks(script: str = "train.py") -> dict[str, str]:
    """The stacks ``training_capture(sampled=True)`` records, as the sampler writes them."""
    main = f"{script}:100 <module>\n{script}:30 train_step"
    return {"step": main, "forward": f"{main}\n{script}:42 forward",
            "read": f"{main}\n{script}:57 log_loss\n{SAMPLED_LIB}:1020 item"}


def add_stack_samples(host: PlaneBuilder, *, thread_line_id: int, runs: list[tuple[float, float, str]],
                      stacks: dict[str, str], cpu_share: dict[str, float] | None = None,
                      blocked_share: dict[str, float] | None = None, thread_name: str = "MainThread",
                      lag_us: float = 0.0) -> None:
    """Sampler events on an emitter line: ``runs`` of the Python thread ``thread_name`` (recorded on
    host line ``thread_line_id``) are (start, end, key into ``stacks``); the
    innermost run at each time wins (a step run holds the forward and read runs inside it), cut
    where the stack changes, as the sampler does. ``cpu_share``: per key, the share of each event's
    time its thread spent on a CPU (the sampler's ``py_cpu_us``); keys without one record none.
    ``blocked_share``: likewise, the share the sampler found it blocked in a call (``py_seen_blocked_us``).
    ``lag_us``: each event opens and closes that much after its run's times, with ``py_lag_us``, as an
    emitter taking its samples late records them."""
    emitter = host.line(f"{vocabulary.STACK_LINE_PREFIX}{thread_name}")
    bounds = sorted({b for start, end, _ in runs for b in (start, end)})
    for left, right in zip(bounds, bounds[1:]):
        holding = [(end - start, kind) for start, end, kind in runs if start <= left and right <= end]
        if holding:
            key = min(holding)[1]
            stack = stacks[key]
            shares = {stat: share[key] for stat, share in ((vocabulary.PY_CPU_STAT, cpu_share or {}),
                                                            (vocabulary.PY_SEEN_BLOCKED_STAT, blocked_share or {}))
                      if key in share}
            emitter.event(stack.rsplit("\n", 1)[-1].rsplit("/", 1)[-1], left + lag_us, right - left, **{
                vocabulary.PY_STACK_STAT: stack, vocabulary.PY_THREAD_STAT: thread_line_id,
                vocabulary.PY_THREAD_NAME_STAT: thread_name, **({vocabulary.PY_LAG_STAT: round(lag_us)} if lag_us else {}),
                **{stat: round(share * (right - left)) for stat, share in shares.items()}})


def _program_lines(builder: XSpaceBuilder, modules: list[LineBuilder], op_lines: list[LineBuilder],
                   step_lines: list[LineBuilder], mod_start: np.ndarray, mod_dur: np.ndarray,
                   programs: list[StepProgram]) -> None:
    for d, (module, ops, step_line) in enumerate(zip(modules, op_lines, step_lines)):
        for step, program in enumerate(programs):
            start, dur = float(mod_start[step, d]), float(mod_dur[step, d])
            module.event(f"{program.module}({program.program_id})", start, dur, run_id=step)
            step_line.event(str(step), start, dur)
            at = start
            for symbol, (name, category, share) in enumerate(program.ops, 1):
                ops.event(name, at, dur * share * OP_FILL, metadata={
                    vocabulary.PROGRAM_ID_STAT: program.program_id, "symbol_id": symbol,
                    vocabulary.HLO_CATEGORY_STAT: category})
                at += dur * share
    metadata = builder.plane(vocabulary.METADATA_PLANE)
    for program in {p.program_id: p for p in programs}.values():
        metadata.metadata_event(program.program_id, f"{program.module}({program.program_id})",
                                **{vocabulary.HLO_PROTO_STAT: program.hlo})


def _device_lines(modules: list[LineBuilder], op_lines: list[LineBuilder], step_lines: list[LineBuilder],
                  mod_start: np.ndarray, mod_dur: np.ndarray, ops_per_step: int, rng) -> None:
    steps = mod_start.shape[0]
    # Ops tile each module: equal slots, each op filling 90% of its slot.
    slot = np.arange(ops_per_step) / max(ops_per_step, 1)
    op_names = rng.integers(0, len(OP_NAMES), size=ops_per_step)
    for d, (module, ops, step_line) in enumerate(zip(modules, op_lines, step_lines)):
        starts, durs = mod_start[:, d], mod_dur[:, d]
        for step in range(steps):
            module.event("SyncTensorsGraph.123", float(starts[step]), float(durs[step]), run_id=step)
        step_line.events([str(s) for s in range(steps)], np.arange(steps), starts, durs)
        op_start = (starts[:, None] + durs[:, None] * slot[None, :]).ravel()
        op_dur = np.repeat(durs * 0.9 / max(ops_per_step, 1), ops_per_step)
        ops.events(OP_NAMES, np.tile(op_names, steps), op_start, op_dur)


def write_session(logdir: str, run: str, captures: dict[str, bytes], manifest: dict | None = None) -> str:
    """Write ``captures`` ({worker name: XSpace bytes}) as session ``run`` of ``logdir``."""
    run_dir = os.path.join(profile_root(logdir), run)
    os.makedirs(run_dir, exist_ok=True)
    for name, data in captures.items():
        with open(os.path.join(run_dir, f"{name}.xplane.pb"), "wb") as handle:
            handle.write(data)
    if manifest is not None:
        write_manifest(run_dir, manifest)
    return run_dir


def write_before_after(logdir: str, *, steps: int = 60, devices: int = 2) -> tuple[str, str]:
    """Sessions ``before`` (a read every step) and ``after`` (no read) of one job: (run dirs)."""
    before = write_session(logdir, "before", {"localhost_9012": training_capture(
        steps=steps, devices=devices, read_every=1, seed=1)})
    after = write_session(logdir, "after", {"localhost_9013": training_capture(
        steps=steps, devices=devices, read_every=0, seed=2)})
    return before, after


# The TPU-shaped training capture the benchmarks measure: 4 chips, a read every step, a compile
# every 100 steps.
BENCH_SHAPE = dict(devices=4, ops_per_step=50, read_every=1, recompile_every=100)


def steps_for_events(events: int, **shape) -> int:
    """How many steps make a ``training_capture`` of this shape about ``events`` events long."""
    return max(1, round(events / (training_event_count(steps=1000, **shape) / 1000)))


def bench_capture(events: int, **changes) -> tuple[bytes, int]:
    """A ``BENCH_SHAPE`` capture (with ``changes`` to it) of about ``events`` events: (its bytes, its
    exact event count)."""
    shape = {**BENCH_SHAPE, **changes}
    seed = shape.pop("seed", 0)
    steps = steps_for_events(events, **shape)
    return training_capture(steps=steps, seed=seed, **shape), training_event_count(steps=steps, **shape)


def write_bench_session(logdir: str, events: int, run: str = "big") -> tuple[str, int, int]:
    """A one-worker session of a ``bench_capture``: (its run dir, event count, capture bytes)."""
    capture, count = bench_capture(events)
    return write_session(logdir, run, {"localhost_9012": capture}), count, len(capture)
