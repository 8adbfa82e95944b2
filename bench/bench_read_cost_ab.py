"""A read's cost: the analysis' charge vs the A/B saving, in step time and in device idle time.

Run as ``python bench/bench_read_cost_ab.py [--repeat N] [--cases helper,closure,diffusers]``
(PJRT_DEVICE=CPU, torch_xla installed). Each repetition captures each case once with the real CLI
from a worker run with ``--pin-cores --alternate-reads`` (``tests/support/workloads/ab_harness.py``)
and prints per case: the charge per step (``transfer_from_device`` in the runs with reads) and the
cost (that charge plus the device time the reads added, ``read_slowdown``), the saving per step in
step time and in device idle time (medians over neighbouring run pairs, see
``tests/support/ab_truth.py``, each with its 95% interval) and their ratios; at the end, per case the median and the range of
each ratio over the repetitions. Cases: ``helper`` (denoise loop, ``tiny_scheduler``'s
``.nonzero().item()`` every step), ``closure`` (a read in ``xm.add_step_closure`` every step),
``diffusers`` (DPM-Solver's index lookup on the device vs ``set_begin_index(0)``): ``ab_truth.AB_CASES``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.conftest import capture_arms
from tests.support.ab_truth import AB_CASES, AB_OPTIONS, ab_figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", default=",".join(AB_CASES))
    args = parser.parse_args()
    ratios: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as logdir:
        for repetition in range(args.repeat):
            for case in args.cases.split(","):
                module, worker_args, steps_per_run = AB_CASES[case]
                ((_, analysis),) = capture_arms(logdir, {f"{case}{repetition}": worker_args + AB_OPTIONS}, module).values()
                f = ab_figures(analysis, steps_per_run)
                step_ratio, idle_ratio = f["cost_us"] / f["saving_us"], f["charged_us"] / f["idle_saving_us"]
                ratios.setdefault(case, []).append((step_ratio, idle_ratio, f["charged_us"] / f["saving_us"]))
                print(f"{case:9s} pairs {f['pairs']:2d}  charged idle {f['charged_us']:6.0f} + device time added "
                      f"{f['cost_us'] - f['charged_us']:6.0f} = {f['cost_us']:6.0f} us/step  "
                      f"saving: step time {f['saving_us']:6.0f} +/-{f['saving_interval_us']:4.0f} "
                      f"(cost ratio {step_ratio:5.2f})  device idle {f['idle_saving_us']:6.0f} "
                      f"+/-{f['idle_saving_interval_us']:4.0f} (idle ratio {idle_ratio:5.2f})  "
                      f"step with/without {f['wall_us']['with_reads']:.0f}/{f['wall_us']['without_reads']:.0f}",
                      flush=True)
    for case, values in ratios.items():
        for k, what in enumerate(("cost/saving in step time", "idle charged/saving in device idle",
                                  "idle charged/saving in step time")):
            r = [v[k] for v in values]
            print(f"{case:9s} {what}: median {np.median(r):.2f}, range {min(r):.2f}..{max(r):.2f}")


if __name__ == "__main__":
    main()
