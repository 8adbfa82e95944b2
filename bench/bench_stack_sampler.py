"""Step time while a capture records with the Python stack sampler on vs off vs no capture.

Two workloads on the CPU XLA device, each in its own process: ``demo`` (the demo's training
step, collectors/demo_worker.py, fixed shapes, a ``loss.item()`` every step) and ``python`` (a
Python-heavy step: many small ops, one sync). Each run warms the step up, then times blocks of
steps under four conditions, interleaved so that drift and other load hit all of them alike:
- ``none``: no capture (the sampler idle);
- ``off``: an in-process capture with ``stack_hz=0``;
- ``off+tick``: the same plus a Python thread that only sleeps 1 ms in a loop, as an emitter
  does. On a virtual machine a thread waking up every millisecond can itself make a step that
  waits on other threads faster (its idle vCPU is not parked), which would hide the sampler's
  cost: ``on`` vs ``off+tick`` is the sampler's own cost;
- ``on``: a capture at ``--hz`` (default 1000).
Each block's median step time (and the main thread's CPU time per step, less sensitive to other
load on the machine than wall time) is one observation; per condition it reports the median
block over all runs, and each comparison as the change of that median with a bootstrap 95%
confidence interval over the blocks (xlaprof.analysis.bootstrap; each block divided by its run's
median block, so that a process that is faster or slower throughout shifts no comparison). It
also reports what the samples add to the capture (bytes per second of capture: the size of the
emitter lines in the capture file), the samples per second the main thread actually got, and the
CPU the emitter threads used. ``--runs N`` repeats each workload in N fresh processes (their
blocks pooled). Run from the repo root:

    .venv/bin/python bench/bench_stack_sampler.py [--runs 3] [--hz 1000] [--switch-interval-ms 5] [--backoff-ms 1]
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

WORKLOADS = ("demo", "python")
NONE, OFF, TICK, ON = "none", "off", "off+tick", "on"
CONDITIONS = (NONE, OFF, TICK, ON)


def python_heavy_step():
    """Many small ops traced per step (the interpreter and the lazy tensor machinery busy), one sync."""
    import torch
    import torch_xla

    import xlaprof

    device = torch_xla.device()
    weights = [torch.randn(8, 8, device=device) for _ in range(4)]

    def run(step: int) -> None:
        with xlaprof.step(step):
            x = torch.ones(8, 8, device=device)
            for i in range(100):
                x = torch.tanh(x @ weights[i % 4] + 0.1) * 0.5
            torch_xla.sync()

    return run


def _step_of(workload: str):
    if workload == "demo":
        from collectors.demo_worker import demo_step

        return demo_step(fixed_shapes=True, read_every=1)
    return python_heavy_step()


def sample_bytes(path: str) -> int:
    """Bytes of a capture file taken by the stack samples: the emitter lines and their event names."""
    from xlaprof.xspace import vocabulary
    from xlaprof.xspace.schema import XSpace

    space = XSpace()
    with open(path, "rb") as handle:
        space.ParseFromString(handle.read())
    (plane,) = [p for p in space.planes if p.name == vocabulary.HOST_PLANE]
    lines = [line for line in plane.lines if line.name.startswith(vocabulary.STACK_LINE_PREFIX)]
    names = {event.metadata_id for line in lines for event in line.events}
    return (sum(line.ByteSize() + 4 for line in lines)
            + sum(plane.event_metadata[i].ByteSize() + 8 for i in names))


def sampler_cpu_s() -> float:
    """CPU seconds used so far by this process's emitter threads (named "py ...", Linux)."""
    from xlaprof.xspace import vocabulary

    total = 0.0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as comm, open(f"/proc/self/task/{task}/schedstat") as stat:
                if comm.read().startswith(vocabulary.STACK_LINE_PREFIX):
                    total += int(stat.read().split()[0]) * 1e-9  # ns on the CPU
        except FileNotFoundError:  # a thread that just ended
            continue
    return total


class _CountingReader:
    """Counts the samples read from the main thread (the bench's view of the achieved rate)."""

    main_samples = 0

    def __init__(self, reader_class) -> None:
        self._reader = reader_class()
        self._main = None

    def read(self, frame):
        if self._main is None:
            self._main = threading.current_thread().name.endswith(" MainThread")
        if self._main:
            _CountingReader.main_samples += 1
        return self._reader.read(frame)


def child(workload: str, hz: float, steps: int, blocks: int, switch_interval_ms: float | None,
          backoff_ms: float | None) -> dict:
    from collectors import stack_sampler

    if switch_interval_ms is not None:
        stack_sampler.SWITCH_INTERVAL_S = switch_interval_ms / 1000
    if backoff_ms is not None:
        stack_sampler.MAX_BACKOFF_S = backoff_ms / 1000
    reader_class = stack_sampler.StackReader
    stack_sampler.StackReader = lambda: _CountingReader(reader_class)
    step = _step_of(workload)
    for i in range(10):  # compiles, caches
        step(i)
    step_s, cpu_s = {c: [] for c in CONDITIONS}, {c: [] for c in CONDITIONS}
    bytes_per_s, main_rate, sampler_cpu = [], [], []
    n = 10
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as logdir:
        for block in range(blocks):
            for k in range(len(CONDITIONS)):
                condition = CONDITIONS[(block + k) % len(CONDITIONS)]
                times, cpu = [], []
                counted = _CountingReader.main_samples
                with _condition(condition, logdir, hz) as run:
                    started = time.perf_counter()
                    for _ in range(steps):
                        t0, c0 = time.perf_counter(), time.thread_time()
                        step(n)
                        times.append(time.perf_counter() - t0)
                        cpu.append(time.thread_time() - c0)
                        n += 1
                    recorded_s = time.perf_counter() - started
                    if condition == ON:
                        sampler_cpu.append(sampler_cpu_s() / recorded_s)
                step_s[condition].append(statistics.median(times))
                cpu_s[condition].append(statistics.median(cpu))
                if condition == ON:
                    (path,) = glob.glob(os.path.join(run.path, "*.xplane.pb"))
                    bytes_per_s.append(sample_bytes(path) / recorded_s)
                    main_rate.append((_CountingReader.main_samples - counted) / recorded_s)
    return {"step_ms": {c: [x * 1e3 for x in v] for c, v in step_s.items()},
            "cpu_ms": {c: [x * 1e3 for x in v] for c, v in cpu_s.items()},
            "bytes_per_s": statistics.median(bytes_per_s), "main_samples_per_s": statistics.median(main_rate),
            "sampler_cpu": statistics.median(sampler_cpu)}


@contextlib.contextmanager
def _condition(condition: str, logdir: str, hz: float):
    """The capture (or none) of one condition, with the ticking thread of ``off+tick``."""
    import xlaprof

    if condition == NONE:
        yield None
        return
    ticking = threading.Event()
    if condition == TICK:
        ticking.set()
        ticker = threading.Thread(target=lambda: [time.sleep(0.001) for _ in iter(ticking.is_set, False)])
        ticker.start()
    try:
        with xlaprof.profile(logdir, stack_hz=hz if condition == ON else 0) as run:
            yield run
    finally:
        if ticking.is_set():
            ticking.clear()
            ticker.join()


def _pooled(runs: list[dict], key: str) -> dict[str, list[float]]:
    """Every block of every run per condition, each divided by its run's median block (all conditions):
    a process that runs the step faster or slower throughout shifts no comparison."""
    pooled = {c: [] for c in CONDITIONS}
    for run in runs:
        scale = statistics.median(x for c in CONDITIONS for x in run[key][c])
        for c in CONDITIONS:
            pooled[c] += [x / scale for x in run[key][c]]
    return pooled


def _change(before: list[float], after: list[float]) -> str:
    """The change of the median block, with its bootstrap 95% CI over the blocks of all runs."""
    from xlaprof.analysis.bootstrap import quantile_change_cis
    from xlaprof.units import format_interval, format_percent_change

    (interval,) = quantile_change_cis(before, after, (0.5,))
    change = format_percent_change(statistics.median(after) / statistics.median(before) - 1)
    return change if interval is None else f"{change} ({format_interval(interval)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=WORKLOADS, action="append", help="default: both")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per workload (default 3)")
    parser.add_argument("--hz", type=float, default=1000, help="the sampler's rate when on (default 1000)")
    parser.add_argument("--steps", type=int, default=40, help="steps per block (default 40)")
    parser.add_argument("--blocks", type=int, default=6, help="blocks per condition and run (default 6)")
    parser.add_argument("--switch-interval-ms", type=float, default=None,
                        help="the interpreter's switch interval while sampling (default: the sampler's own)")
    parser.add_argument("--backoff-ms", type=float, default=None,
                        help="the longest period an emitter backs off to when the GIL is busy "
                             "(default: the sampler's own; 1000/hz: no back-off)")
    parser.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.hz, args.steps, args.blocks, args.switch_interval_ms,
                               args.backoff_ms)))
        return
    forwarded = ["--hz", str(args.hz), "--steps", str(args.steps), "--blocks", str(args.blocks)]
    for flag, value in (("--switch-interval-ms", args.switch_interval_ms), ("--backoff-ms", args.backoff_ms)):
        if value is not None:
            forwarded += [flag, str(value)]
    print(f"stack_hz={args.hz:g}, {args.runs} runs x {args.blocks} blocks x {args.steps} steps per condition"
          + (f", switch interval {args.switch_interval_ms:g} ms" if args.switch_interval_ms is not None else "")
          + (f", back-off up to {args.backoff_ms:g} ms" if args.backoff_ms is not None else ""))
    for workload in args.workload or WORKLOADS:
        runs = []
        for _ in range(args.runs):
            result = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", workload, *forwarded],
                                    capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PJRT_DEVICE="CPU"))
            if result.returncode != 0:
                sys.exit(f"{workload}: the benchmark process failed:\n{result.stderr[-2000:]}")
            runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
        step, cpu = _pooled(runs, "step_ms"), _pooled(runs, "cpu_ms")
        for title, key in ((f"\n{workload}: median step time ms   ", "step_ms"),
                           ("  main thread CPU per step ms  ", "cpu_ms")):
            print(title + "  ".join(f"{c}: {statistics.median(x for r in runs for x in r[key][c]):.3f}"
                                    for c in CONDITIONS))
        for label, after, before in (("on vs off+tick (the sampler's own cost)", ON, TICK), ("on vs off", ON, OFF),
                                     ("capture off vs no capture", OFF, NONE)):
            print(f"  {label}: step time {_change(step[before], step[after])}, "
                  f"main thread CPU {_change(cpu[before], cpu[after])}")
        print(f"  samples add {statistics.median(r['bytes_per_s'] for r in runs) / 1e3:.1f} kB per second of capture; "
              f"main thread sampled {statistics.median(r['main_samples_per_s'] for r in runs):.0f} times/s; "
              f"the sampler's threads used {100 * statistics.median(r['sampler_cpu'] for r in runs):.1f}% of a core")

if __name__ == "__main__":
    main()
