"""Step time while a capture records with the Python stack sampler on vs off vs no capture.

Two workloads on the CPU XLA device, each in its own process: ``demo`` (the demo's training
step, collectors/demo_worker.py, fixed shapes, a ``loss.item()`` every step) and ``python`` (a
Python-heavy step: many small ops, one sync). Each run warms the step up, then times blocks of
steps under three conditions, interleaved so that drift and other load hit all of them alike:
- ``none``: no capture (the sampler idle);
- ``off``: an in-process capture with ``stack_hz=0``;
- ``on``: a capture at ``--hz`` (default 1000).
Each block's median step time (and the main thread's CPU time per step, less sensitive to other
load on the machine than wall time) is one observation. A round runs one block of each condition
back to back (their order rotating); per condition it reports the median block over all runs, and
each comparison as the median over the rounds of the ratio of the two conditions' blocks, with a
percentile-bootstrap 95% confidence interval over the rounds (pairing the blocks of a round cancels
drift across a run and a process that is faster or slower throughout). It also reports what
the samples add to the capture (bytes per second of capture: the size of the emitter lines in the
capture file), the samples per second the main thread actually got, how many of them took the GIL
(the thread had run since the last one) and how many read its stack in Python (the stack had
changed), the CPU the emitter threads used, and how long the main thread's emitter held the GIL
(``stack_sampler.gil_held_ns``: its Python between waits, the metric snapshots too). ``--runs N``
repeats each workload in N fresh processes (their rounds pooled). Run from the repo root:

    .venv/bin/python bench/bench_stack_sampler.py [--runs 4] [--blocks 40] [--steps 10] [--hz 1000]
        [--switch-interval-ms 5] [--backoff-ms 1] [--pin-cores] [--no-trips] [--no-marks]

With ``--no-trips`` the main thread is sampled as the other threads are (the emitter takes the GIL
to compare its stack) instead of tripped (it samples itself in a pending call). With ``--no-marks``
the reading ops keep their own kernels (``collectors/read_calls.py``): the sampler's cost alone.

With ``--pin-cores`` the process's Python threads (the main thread, the sampler's emitters) and torch's
autograd engine thread run on one core, the CPU device's native threads on the other
(``ab_harness.pin_host_and_device``, as the corpus' A/B arms run): on the CPU device the device
computes on the host's cores, and unpinned its threads and the sampler's compete for both.
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
NONE, OFF, ON = "none", "off", "on"
CONDITIONS = (NONE, OFF, ON)


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
    """CPU seconds used so far by this process's emitter threads (named "py ...", Linux) and the
    main thread's tripping thread."""
    from collectors.stack_sampler import TRIP_THREAD
    from tests.support.truth.step_recorder import threads_cpu_ns
    from tests.support.workloads.ab_harness import thread_names
    from xlaprof.xspace import vocabulary

    names = thread_names()
    sampler = {str(tid) for tid, name in names.items() if name.startswith((vocabulary.STACK_LINE_PREFIX, TRIP_THREAD))}
    return threads_cpu_ns(sampler.__contains__) * 1e-9


class _MainWatchers:
    """The sampler's C loops of the main thread, kept as they are made (one a capture), so that their
    counters (samples, compared: those that took the GIL, returned: the stack reads) give the achieved
    rate: the loop itself, not a wrapper around its every call (which the emitter's own cost would hold)."""

    def __init__(self, watcher_class, trips: bool) -> None:
        self._watcher_class, self._trips, self.made = watcher_class, trips, []

    def __call__(self, ident: int, *args, **kwargs):
        watcher = self._watcher_class(ident, *args, **dict(kwargs, trips=self._trips and kwargs["trips"]))
        if ident == threading.main_thread().ident:
            self.made.append(watcher)
        return watcher

    def counts(self, since: int) -> tuple[int, int, int]:
        """(samples, compared, returned) of the main thread's loops made from the ``since``-th on."""
        made = self.made[since:]
        return (sum(w.samples for w in made), sum(w.compared for w in made), sum(w.returned for w in made))


def child(workload: str, hz: float, steps: int, blocks: int, switch_interval_ms: float | None,
          backoff_ms: float | None, pin_cores: bool, trips: bool, marks: bool) -> dict:
    from collectors import read_calls, stack_sampler

    if pin_cores:
        from tests.support.workloads.ab_harness import pin_host_and_device

        pin_host_and_device()

    if switch_interval_ms is not None:
        stack_sampler.SWITCH_INTERVAL_S = switch_interval_ms / 1000
    if backoff_ms is not None:
        stack_sampler.MAX_BACKOFF_S = backoff_ms / 1000
    main_watchers = stack_sampler.Watcher = _MainWatchers(stack_sampler.Watcher, trips)
    if not marks:
        read_calls.install = lambda: None  # what a capture's start calls to mark the reading ops
    step = _step_of(workload)
    for i in range(10):  # compiles, caches
        step(i)
    step_s, cpu_s = {c: [] for c in CONDITIONS}, {c: [] for c in CONDITIONS}
    bytes_per_s, main_rate, compare_rate, read_rate, sampler_cpu, gil_held = [], [], [], [], [], []
    main_ident = threading.main_thread().ident
    n = 10
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as logdir:
        for block in range(blocks):
            for k in range(len(CONDITIONS)):
                condition = CONDITIONS[(block + k) % len(CONDITIONS)]
                times, cpu = [], []
                made, held_ns = len(main_watchers.made), stack_sampler.gil_held_ns(main_ident)
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
                    samples, compared, read = main_watchers.counts(made)
                    if samples == 0:
                        raise SystemExit("the stack sampler took no sample of the main thread (see its warning)")
                    main_rate.append(samples / recorded_s)
                    compare_rate.append(compared / recorded_s)
                    read_rate.append(read / recorded_s)
                    gil_held.append((stack_sampler.gil_held_ns(main_ident) - held_ns) * 1e-9 / recorded_s)
    return {"step_ms": {c: [x * 1e3 for x in v] for c, v in step_s.items()},
            "cpu_ms": {c: [x * 1e3 for x in v] for c, v in cpu_s.items()},
            "bytes_per_s": statistics.median(bytes_per_s), "main_samples_per_s": statistics.median(main_rate),
            "main_compared_per_s": statistics.median(compare_rate), "main_reads_per_s": statistics.median(read_rate),
            "sampler_cpu": statistics.median(sampler_cpu), "gil_held": statistics.median(gil_held)}


@contextlib.contextmanager
def _condition(condition: str, logdir: str, hz: float):
    """The capture (or none) of one condition."""
    import xlaprof

    if condition == NONE:
        yield None
        return
    with xlaprof.profile(logdir, stack_hz=hz if condition == ON else 0) as run:
        yield run


def _paired_ratios(runs: list[dict], key: str, before: str, after: str) -> list[float]:
    """Per round (one block of each condition, run back to back), the ``after`` block over the
    ``before`` block: drift across a run and a process faster or slower throughout cancel out."""
    return [a / b for run in runs for b, a in zip(run[key][before], run[key][after])]


def _change(ratios: list[float]) -> str:
    """The median paired ratio as a change, with its percentile-bootstrap 95% CI over the rounds."""
    import numpy as np

    from xlaprof.units import format_interval, format_percent_change

    ratios = np.asarray(ratios)
    draws = np.random.default_rng(0).integers(0, ratios.size, (2000, ratios.size))
    low, high = np.quantile(np.median(ratios[draws], axis=1), [0.025, 0.975])
    return f"{format_percent_change(np.median(ratios) - 1)} ({format_interval((low - 1, high - 1))})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=WORKLOADS, action="append", help="default: both")
    parser.add_argument("--runs", type=int, default=4, help="fresh processes per workload (default 4)")
    parser.add_argument("--hz", type=float, default=1000, help="the sampler's rate when on (default 1000)")
    parser.add_argument("--steps", type=int, default=10, help="steps per block (default 10)")
    parser.add_argument("--blocks", type=int, default=40, help="blocks per condition and run (default 40: with 4 "
                                                                "runs, a 95%% interval within about +/-1.5 points)")
    parser.add_argument("--switch-interval-ms", type=float, default=None,
                        help="the interpreter's switch interval while sampling (default: the sampler's own)")
    parser.add_argument("--backoff-ms", type=float, default=None,
                        help="the longest period an emitter backs off to when the GIL is busy "
                             "(default: the sampler's own; 1000/hz: no back-off)")
    parser.add_argument("--pin-cores", action="store_true",
                        help="the Python threads (the sampler's among them) on the first core, the CPU device's "
                             "threads on the second")
    parser.add_argument("--no-trips", action="store_true",
                        help="sample the main thread as the other threads are, taking the GIL, not tripped")
    parser.add_argument("--no-marks", action="store_true",
                        help="leave the reading ops their own kernels: the sampler's cost without the read marks'")
    parser.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.hz, args.steps, args.blocks, args.switch_interval_ms,
                               args.backoff_ms, args.pin_cores, not args.no_trips, not args.no_marks)))
        return
    forwarded = ["--hz", str(args.hz), "--steps", str(args.steps), "--blocks", str(args.blocks)]
    forwarded += ["--pin-cores"] if args.pin_cores else []
    forwarded += ["--no-trips"] if args.no_trips else []
    forwarded += ["--no-marks"] if args.no_marks else []
    for flag, value in (("--switch-interval-ms", args.switch_interval_ms), ("--backoff-ms", args.backoff_ms)):
        if value is not None:
            forwarded += [flag, str(value)]
    print(f"stack_hz={args.hz:g}, {args.runs} runs x {args.blocks} blocks x {args.steps} steps per condition"
          + (f", switch interval {args.switch_interval_ms:g} ms" if args.switch_interval_ms is not None else "")
          + (f", back-off up to {args.backoff_ms:g} ms" if args.backoff_ms is not None else "")
          + (", pinned: Python on one core, the device on the other" if args.pin_cores else "")
          + (", the main thread not tripped" if args.no_trips else "")
          + (", the reads not marked" if args.no_marks else ""))
    for workload in args.workload or WORKLOADS:
        runs = []
        for _ in range(args.runs):
            result = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", workload, *forwarded],
                                    capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PJRT_DEVICE="CPU"))
            if result.returncode != 0:
                sys.exit(f"{workload}: the benchmark process failed:\n{result.stderr[-2000:]}")
            runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
        for title, key in ((f"\n{workload}: median step time ms   ", "step_ms"),
                           ("  main thread CPU per step ms  ", "cpu_ms")):
            print(title + "  ".join(f"{c}: {statistics.median(x for r in runs for x in r[key][c]):.3f}"
                                    for c in CONDITIONS))
        for label, after, before in (("on vs off (the sampler's cost)", ON, OFF), ("capture off vs no capture", OFF, NONE)):
            print(f"  {label}: step time {_change(_paired_ratios(runs, 'step_ms', before, after))}, "
                  f"main thread CPU {_change(_paired_ratios(runs, 'cpu_ms', before, after))}")
        print(f"  samples add {statistics.median(r['bytes_per_s'] for r in runs) / 1e3:.1f} kB per second of capture; "
              f"main thread sampled {statistics.median(r['main_samples_per_s'] for r in runs):.0f} times/s "
              f"({statistics.median(r['main_compared_per_s'] for r in runs):.0f} took the GIL), "
              f"its stack read {statistics.median(r['main_reads_per_s'] for r in runs):.0f} times/s; "
              f"the sampler's threads used {100 * statistics.median(r['sampler_cpu'] for r in runs):.1f}% of a core, "
              f"its emitter held the GIL {1e3 * statistics.median(r['gil_held'] for r in runs):.1f} ms a second")

if __name__ == "__main__":
    main()
