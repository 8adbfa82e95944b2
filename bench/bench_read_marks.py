"""What a read mark costs a read: ``.item()`` of a device scalar from a 30-frame stack, with and
without the marks (``collectors/read_calls.py``), outside a capture and inside one.

Run as ``PJRT_DEVICE=CPU .venv/bin/python bench/bench_read_marks.py [--op item|cast] [--runs 3]
[--reads 300] [--blocks 30] [--depth 30] [--hz 1000]``. Each run is a fresh process that times
blocks of ``--reads`` calls of the op on one materialized tensor, called ``--depth`` frames down:
``item`` (the default), ``t.item()`` of a scalar, a real TransferFromDevice each time; ``cast``,
``.to(torch.float16)`` of a 4-element tensor, which stays on the device (the marked op ``_to_copy``
reads only when it copies to the CPU: the mark passes it through). The marks are installed before
every other block and removed after it (``read_calls.install``/``uninstall``: a read costs 40-80 us
from one process to the next, so the pairs are compared within a process): ``--blocks`` pairs
outside a capture, then as many inside one in-process capture with the stack sampler at ``--hz``.
A block's figure is its time per call; a pair's, the marked block less the plain one. Printed per
run and for all runs pooled, outside and inside the capture, in wall time and in the calling
thread's CPU time: the median time per call without the marks, and the median of the pairs'
differences (what a mark costs a call) with its 95% interval (percentile bootstrap over the pairs).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

PLACES = ("outside a capture", "inside a capture")
OPS = ("item", "cast")


def _call_from_depth(call, depth: int):
    return call() if depth <= 1 else _call_from_depth(call, depth - 1)


def _block(call, reads: int, depth: int) -> tuple[float, float]:
    """Microseconds per read over ``reads`` reads: wall time, and the calling thread's CPU time."""
    started, cpu = time.perf_counter(), time.thread_time()
    for _ in range(reads):
        _call_from_depth(call, depth)
    return (time.perf_counter() - started) / reads * 1e6, (time.thread_time() - cpu) / reads * 1e6


def _pairs(call, reads: int, blocks: int, depth: int) -> dict[str, list[float]]:
    """Per pair of blocks (their order alternating): the plain block's wall and CPU time per read,
    and the marked one's less it."""
    from collectors import read_calls

    figures: dict[str, list[float]] = {key: [] for key in ("wall", "cpu", "wall_cost", "cpu_cost")}
    for pair in range(blocks):
        block = {}
        for marked in ((False, True) if pair % 2 else (True, False)):
            read_calls.install() if marked else read_calls.uninstall()
            block[marked] = _block(call, reads, depth)
        for i, key in enumerate(("wall", "cpu")):
            figures[key].append(block[False][i])
            figures[f"{key}_cost"].append(block[True][i] - block[False][i])
    read_calls.uninstall()
    return figures


def child(op: str, reads: int, blocks: int, depth: int, hz: float) -> dict:
    """Per place, ``_pairs``' figures (us)."""
    import torch
    import torch_xla

    import xlaprof

    tensor = torch.ones(() if op == "item" else (4,), device=torch_xla.device()) * 2
    torch_xla.sync()
    call = tensor.item if op == "item" else lambda: tensor.to(torch.float16)
    _block(call, reads, depth)  # warm: the transfer path
    result = {PLACES[0]: _pairs(call, reads, blocks, depth)}
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as logdir:
        with xlaprof.profile(logdir, stack_hz=hz):
            result[PLACES[1]] = _pairs(call, reads, blocks, depth)
    return result


def _interval(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """The median's percentile-bootstrap 95% interval."""
    import numpy as np

    rng = np.random.default_rng(0)
    data = np.asarray(values)
    medians = np.median(rng.choice(data, (rounds, data.size)), axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def _lines(place: str, figures: dict[str, list[float]]) -> list[str]:
    lines = []
    for key, what in (("wall", "wall time"), ("cpu", "the calling thread's CPU")):
        low, high = _interval(figures[f"{key}_cost"])
        lines.append(f"  {place:17s} {what:26s} {statistics.median(figures[key]):5.1f} us a call without the "
                     f"marks, the marks {statistics.median(figures[f'{key}_cost']):+5.1f} us (95% CI {low:+.1f}..{high:+.1f})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=OPS, default="item",
                        help="item: a read of a device scalar (default); cast: a device-side cast, not a read")
    parser.add_argument("--runs", type=int, default=3, help="processes (default 3)")
    parser.add_argument("--reads", type=int, default=300, help="calls per block (default 300)")
    parser.add_argument("--blocks", type=int, default=30, help="pairs of blocks per place and process (default 30)")
    parser.add_argument("--depth", type=int, default=30, help="Python frames above the read (default 30)")
    parser.add_argument("--hz", type=float, default=1000, help="the stack sampler's rate in a capture (default 1000)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.op, args.reads, args.blocks, args.depth, args.hz)))
        return
    env = dict(os.environ, PJRT_DEVICE=os.environ.get("PJRT_DEVICE", "CPU"))
    what = "a read of a device scalar" if args.op == "item" else "a device-side cast (not a read)"
    print(f"{what} from {args.depth} frames down, {args.blocks} pairs of {args.reads}-call blocks per place "
          f"and run, the stack sampler at {args.hz:g} Hz in the capture")
    pooled: dict[str, dict[str, list[float]]] = {place: {} for place in PLACES}
    for run in range(args.runs):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--op", args.op, "--reads", str(args.reads),
                              "--blocks", str(args.blocks), "--depth", str(args.depth), "--hz", str(args.hz)],
                             capture_output=True, text=True, env=env, cwd=REPO, check=True)
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"run {run + 1}")
        for place in PLACES:
            print("\n".join(_lines(place, figures[place])))
            for key, values in figures[place].items():
                pooled[place].setdefault(key, []).extend(values)
    print("all runs")
    for place in PLACES:
        print("\n".join(_lines(place, pooled[place])))


if __name__ == "__main__":
    main()
