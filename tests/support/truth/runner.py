"""Run corpus cases and record their truth: ``python -m tests.support.truth.runner``.

For each case of ``--cases`` (``tests.support.corpus.cases``), in order, in this one process: its
``warm`` steps, then its ``window`` steps, recorded by ``--mode``:
- ``capture``: inside ``xlaprof.profile(--logdir, name=case)`` with ``StepRecorder`` (the last step
  waits for the device, as a script's end does, so its device work is in the window);
- ``lines``: under ``LineTracer`` instead (the user's and third-party files: not torch's, the
  standard library's, xlaprof's or this harness').
``--out`` gets one JSON object, case name -> ``{"session", "steps"}`` (capture) or ``{"compiles",
"reads", "fallbacks"}`` (lines), rewritten after each case. Each case seeds torch with 0 before
building, and both modes run the same cases in the same order, so the two processes take the same
steps and meet the same compile cache.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))


def user_file(path: str) -> bool:
    """The files whose lines a user can act on: their script and third-party libraries."""
    from xlaprof.framework_files import is_framework_file

    here = os.path.abspath(path)
    return not is_framework_file(path) and not here.startswith(HARNESS_DIR) and "/xlaprof/" not in here \
        and "/collectors/" not in here


def run_case(case, mode: str, logdir: str | None) -> dict:
    """One case's steps, the window captured or traced (see the module's contract)."""
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    workload = importlib.import_module(case.module_path)
    torch.manual_seed(0)
    step = workload.build(torch, torch_xla.device(), list(case.args))
    for i in range(case.warm):
        step(i)
    xm.wait_device_ops()  # the harness' own boundary, before the window: no step's work runs into it
    window = range(case.warm, case.warm + case.window)
    if mode == "capture":
        import xlaprof
        from tests.support.truth.step_recorder import StepRecorder

        recorder = StepRecorder()
        with xlaprof.profile(logdir, name=case.name) as run:
            for i in window:
                with recorder.step(i):
                    step(i)
                    if i == window[-1]:
                        xm.wait_device_ops()
        return {"session": run.path, "steps": recorder.rows}
    from tests.support.truth.line_tracer import LineTracer

    with LineTracer(user_file) as tracer:
        for i in window:
            step(i)
            if i == window[-1]:
                xm.wait_device_ops()
    return {"compiles": dict(tracer.compiles), "reads": dict(tracer.reads), "fallbacks": dict(tracer.fallbacks)}


def main(argv: list[str] | None = None) -> None:
    from tests.support.corpus.cases import BY_NAME, CASES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("capture", "lines"), required=True)
    parser.add_argument("--cases", default=",".join(c.name for c in CASES), help="comma-separated case names")
    parser.add_argument("--logdir", help="where the capture mode writes one session per case")
    parser.add_argument("--out", required=True)
    opts = parser.parse_args(argv)
    records = {}
    for name in opts.cases.split(","):
        began = time.perf_counter()
        records[name] = run_case(BY_NAME[name], opts.mode, opts.logdir)
        with open(opts.out, "w") as handle:  # after each case: a failing case keeps the others' records
            json.dump(records, handle)
        print(f"{opts.mode} {name} done in {time.perf_counter() - began:.1f} s", flush=True)


if __name__ == "__main__":
    main()
    # Every record is written: leave without the interpreter's teardown, which races with the threads
    # torch_xla's MpDeviceLoader leaves running ("terminate called without an active exception").
    sys.stdout.flush()
    os._exit(0)
