"""Run corpus cases and record their truth: ``python -m tests.support.truth.runner``.

For each case of ``--cases`` (``tests.support.corpus.cases``), in order, in this one process: its
``warm`` steps, then its ``window`` steps, recorded by ``--mode``:
- ``capture``: inside ``xlaprof.profile(--logdir, name=case)`` with ``StepRecorder`` (the last step
  waits for the device, as a script's end does, so its device work is in the window); then, for a
  case with ``without_reads``, its A/B blocks (``ab_blocks``) under a second profile (``<case>-ab``,
  not analysed: the same profiler, sampler and read marks at work as in the window);
- ``lines``: under ``LineTracer`` instead (the user's and third-party files: not torch's, the
  standard library's, xlaprof's or this harness'), which follows the threads the case starts from
  its build on (a ``run_async`` step closure's, a loader's).
``--pin-cores``: the process' host and device threads on two cores (``ab_harness.pin_host_and_device``:
on the CPU device the "device" computes on the host's cores; pinned, a read's cost is not mixed
with the two contending for them).
``--out`` gets one JSON object, case name -> ``{"session", "steps"}`` (capture; with ``"ab"``:
``{"with_reads": [block, ...], "without_reads": [...]}``, each block as ``ab_blocks`` records it, and
``"ab_session"``, the A/B capture's path, which names each block by a span of its arm,
``ab_harness.READS_ARM`` or ``NO_READS_ARM``) or ``{"compiles", "reads", "fallbacks"}`` (lines),
rewritten after each case.
Each case seeds torch with 0 before building, and ``corpus_run`` gives both modes' processes the same
cases in the same order (in groups, or each case in a process of its own), so the two take the same
steps, after the same cases (a case compiles its own graphs while warming up, and the harness syncs
before its window).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import sys
import time

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
AB_PAIRS = 10
AB_MAX_PAIRS = 30  # pairs run at most, to get AB_PAIRS whose cores no other load took (ab_harness.ForeignLoad)
AB_BLOCK_S = 0.3  # at least this long a block: the window's steps repeated (a short one is all noise)


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
    tracer = None
    if mode == "lines":
        from tests.support.truth.line_tracer import LineTracer

        tracer = LineTracer(user_file)
        tracer.follow_new_threads()  # the threads the warm-up starts (a step closure's, a loader's)
    torch.manual_seed(0)
    step = workload.build(torch, torch_xla.device(), list(case.args))
    for i in range(case.warm):
        step(i)
    # The harness' own boundary, before the window: no step's work runs into it, nor a tensor left
    # pending (a full corpus run once compiled, at input_bound's first window step, a graph with one
    # scalar output more than its steps make, which the line tracer's process never saw).
    torch_xla.sync()
    xm.wait_device_ops()
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
        record = {"session": run.path, "steps": recorder.rows}
        if case.without_reads is not None:
            record["ab"], record["ab_session"] = ab_blocks(case, step, logdir)
        return record
    with tracer:
        for i in window:
            step(i)
            if i == window[-1]:
                xm.wait_device_ops()
    return {"compiles": dict(tracer.compiles), "reads": dict(tracer.reads), "fallbacks": dict(tracer.fallbacks)}


def ab_blocks(case, step, logdir: str) -> tuple[dict[str, list[dict]], str]:
    """The case's ``step`` against its arm without reads (built here, same seed, its window's shapes
    compiled first; for ``REPLAYED_READS``, ``step`` itself with its reads answered from a recording:
    ``replayed``), in ``AB_PAIRS`` pairs of blocks, the arms alternating (a changing load falls on
    both): each block one arm's window of steps, repeated to last ``AB_BLOCK_S`` (each step recorded
    as the window's are, so both arms pay the recorder's cost as the window did), ended by
    ``xm.wait_device_ops()``, with what ``StepRecorder`` records of a step (its start, wall time,
    clocks and counter deltas: a row of the truth's model, as a step is) and the share of a pinned
    core's time that went to other loads (``foreign``). A pair with a block above
    ``ab_harness.FOREIGN_MAX_SHARE`` does not count: pairs run until ``AB_PAIRS`` count, at most
    ``AB_MAX_PAIRS``. Returns the blocks per arm and the
    capture's session (where the truth scores the analysis' shares)."""
    import torch
    import torch_xla

    from tests.support.corpus.cases import REPLAYED_READS

    window = range(case.warm, case.warm + case.window)
    if case.without_reads == REPLAYED_READS:
        with replayed(step, window) as without:
            return _pairs_of_blocks(case, step, without, window, logdir)
    torch.manual_seed(0)
    without = importlib.import_module(case.module_path).build(torch, torch_xla.device(),
                                                              list(case.args + case.without_reads))
    for i in range(case.warm):
        without(i)
    return _pairs_of_blocks(case, step, without, window, logdir)


def _pairs_of_blocks(case, step, without, window: range, logdir: str) -> tuple[dict[str, list[dict]], str]:
    """``ab_blocks``' pairs, given the arm without the reads (warmed up to the window)."""
    import torch_xla.core.xla_model as xm

    import xlaprof
    from tests.support.truth.step_recorder import StepRecorder
    from tests.support.workloads.ab_harness import NO_READS_ARM, READS_ARM, ForeignLoad, quiet

    for i in window:
        without(i)
    xm.wait_device_ops()
    began = time.perf_counter()
    for i in window:
        step(i)
    xm.wait_device_ops()
    repeats = max(1, math.ceil(AB_BLOCK_S / (time.perf_counter() - began)))
    arms, recorder, block_clocks = {READS_ARM: step, NO_READS_ARM: without}, StepRecorder(), StepRecorder()
    blocks: dict[str, list[dict]] = {arm: [] for arm in arms}
    load, counted, pairs = ForeignLoad(), 0, 0
    with xlaprof.profile(logdir, name=f"{case.name}-ab") as ab_run:
        while counted < AB_PAIRS and pairs < AB_MAX_PAIRS:
            for arm, run in arms.items():
                load.start()
                # A span of the arm, so ab_truth.ab_figures can score the analysis on this session too.
                with block_clocks.step(pairs), xlaprof.trace(arm):
                    for i in list(window) * repeats:
                        with recorder.step(i):  # the window's own per-step cost, in both arms
                            run(i)
                    xm.wait_device_ops()
                blocks[arm].append({**block_clocks.rows[-1], "foreign": load.share()})
            pairs += 1
            counted += quiet(*(blocks[arm][-1]["foreign"] for arm in arms))
    return blocks, ab_run.path


@contextlib.contextmanager
def replayed(step, window: range):
    """``step`` with each read answered from a recording of ``window``'s steps (``read_replay``), the
    replay's kernels taken away at the end (the cases after it read as they would alone)."""
    import torch_xla.core.xla_model as xm

    from tests.support.truth.read_replay import ReadReplay

    replay = ReadReplay.install()
    try:
        for i in window:
            with replay.recording(i):
                step(i)
        xm.wait_device_ops()

        def without(i: int) -> None:
            with replay.replaying(i):
                step(i)
        yield without
    finally:
        ReadReplay.uninstall()


def main(argv: list[str] | None = None) -> None:
    from tests.support.corpus.cases import BY_NAME, CASES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("capture", "lines"), required=True)
    parser.add_argument("--cases", default=",".join(c.name for c in CASES), help="comma-separated case names")
    parser.add_argument("--logdir", help="where the capture mode writes one session per case")
    parser.add_argument("--out", required=True)
    parser.add_argument("--pin-cores", action="store_true", help="host and device threads on two cores")
    opts = parser.parse_args(argv)
    if opts.pin_cores:
        from tests.support.workloads.ab_harness import pin_host_and_device

        pin_host_and_device()
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
