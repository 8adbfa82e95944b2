"""The device idle time the truth counts as blocked in a corpus case, with and without a capture.

    .venv/bin/python bench/bench_capture_off_cpu.py [--case moe_batched] [--runs 3] [--hz 0,250,1000]

The truth (``tests/support/truth``) counts as blocked the device's idle time while the main thread
was off the CPU, not runnable, torch's autograd engine did not run for it, and the stack sampler
did not hold the GIL to read its stack. This runs the
case's window of steps (after its warm ones, in a process of its own per arm and run, the arms
alternating) without a capture, then under ``xlaprof.profile`` at each ``--hz`` (0: the sampler off),
recorded as one row of the truth (``StepRecorder``), and prints per arm the window's wall time, the
truth's blocked and tracing idle time (``Truth.of``), the CPU time of the sampler's emitter threads
(named ``py <thread>``), how long the main thread's emitter held the GIL (``sampler_gil_us``: the
truth counts it as tracing) and the truth's blocked time were it counted as the main thread off the
CPU, as it was before.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_CAPTURE = "none"


def emitters_cpu_ns() -> int:
    """CPU time (ns) so far of the sampler's emitter threads (named ``py <thread>``) of this process."""
    from tests.support.truth.step_recorder import TASKS, threads_cpu_ns
    from xlaprof.xspace.vocabulary import STACK_LINE_PREFIX

    def emitter(tid: str) -> bool:
        with open(f"{TASKS}/{tid}/comm") as comm:
            return comm.read().startswith(STACK_LINE_PREFIX)
    return threads_cpu_ns(emitter)


def child(case_name: str, arm: str) -> dict:
    """One arm's window: its times in ms."""
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    import importlib

    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    import xlaprof
    from tests.support.corpus.cases import BY_NAME
    from tests.support.truth.step_recorder import StepRecorder
    from tests.support.truth.table import Truth

    case = BY_NAME[case_name]
    torch.manual_seed(0)
    step = importlib.import_module(case.module_path).build(torch, torch_xla.device(), list(case.args))
    for i in range(case.warm):
        step(i)
    torch_xla.sync()
    xm.wait_device_ops()
    capture = None if arm == NO_CAPTURE else xlaprof.profile(tempfile.mkdtemp(), name=case_name, stack_hz=float(arm))
    if capture:
        capture.__enter__()
    recorder, emitters = StepRecorder(), emitters_cpu_ns()
    with recorder.step(case.warm):  # the truth's own row: wall, the main thread's clocks, the autograd engine's
        for i in range(case.warm, case.warm + case.window):
            step(i)
        xm.wait_device_ops()
    emitters = emitters_cpu_ns() - emitters
    if capture:
        capture.__exit__(None, None, None)
    (row,) = recorder.rows
    no_lines = {"reads": {}, "compiles": {}, "fallbacks": {}}
    idle = Truth.of({"steps": [row], "session": ""}, no_lines).idle_us
    gil_as_blocked = Truth.of({"steps": [dict(row, sampler_gil_us=0.0)], "session": ""}, no_lines).idle_us
    return {"wall_ms": row["wall_us"] / 1e3, "blocked_ms": idle["host_blocked"] / 1e3,
            "tracing_ms": idle["host_tracing"] / 1e3, "emitters_ms": emitters / 1e6,
            "gil_ms": row["sampler_gil_us"] / 1e3, "gil_blocked_ms": gil_as_blocked["host_blocked"] / 1e3}


def main() -> None:
    sys.path.insert(0, REPO)
    from tests.support.corpus.cases import BY_NAME

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="moe_batched", choices=sorted(BY_NAME), metavar="CASE",
                        help="a corpus case (tests/support/corpus/cases.py)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hz", default="0,250,1000", help="the sampler's rates under a capture (0: off)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(child(opts.case, opts.child)), flush=True)
        os._exit(0)  # past torch_xla's teardown: the figures are out
    try:
        arms = [NO_CAPTURE] + [f"{float(hz):g}" for hz in opts.hz.split(",")]
    except ValueError:
        parser.error(f"--hz: comma-separated rates, not {opts.hz!r}")
    results: dict[str, list[dict]] = {arm: [] for arm in arms}
    env = dict(os.environ, PJRT_DEVICE="CPU", PYTHONPATH=REPO)
    for run in range(opts.runs):
        for arm in arms:
            done = subprocess.run([sys.executable, __file__, "--case", opts.case, "--child", arm], cwd=REPO, env=env,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"the {arm} arm failed: {done.stderr.strip().splitlines()[-1:]}")
            results[arm].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"run {run + 1}/{opts.runs} {arm}: {results[arm][-1]}", file=sys.stderr, flush=True)
    print(f"{opts.case}, {opts.runs} runs an arm; ms over the window, mean (min..max)")
    columns = {"wall_ms": "wall", "blocked_ms": "truth: blocked", "tracing_ms": "truth: tracing",
               "emitters_ms": "emitters on CPU", "gil_ms": "GIL held for main",
               "gil_blocked_ms": "blocked, GIL off CPU"}
    print(f"{'arm':>15}  " + "  ".join(f"{title:>20}" for title in columns.values()))
    for arm, rows in results.items():
        label = "no capture" if arm == NO_CAPTURE else f"capture {arm} Hz"
        cells = [f"{statistics.mean(v):.0f} ({min(v):.0f}..{max(v):.0f})"
                 for v in ([r[key] for r in rows] for key in columns)]
        print(f"{label:>15}  " + "  ".join(f"{cell:>20}" for cell in cells))


if __name__ == "__main__":
    main()
