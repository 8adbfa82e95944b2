"""Speed of reading and diffing compiled HLO modules: the recompile explainer on 100 graphs.

Run on demand (not a test):  .venv/bin/python bench/bench_hlo.py [--modules 100] [--layers 1,60,250]

For each module size it builds a TPU-shaped capture in which one training step recompiles
``--modules`` times (a new batch size each time; ``tests/support/hlo_builder.mlp_module`` with
``--layers`` hidden layers, so bigger modules have more instructions), then times, in this
process, on the capture already read:
  parse:   every module's bytes parsed (``hlo_modules(space).get``) and its entry signature taken
  explain: ``with_changes`` and ``explain_recompiles`` over the compiles (diffs every graph with
           the previous one of its place, and explains the place)
and, for comparison, ``analyze`` of the whole session (which does both). Best of 3 runs.
Target (issue 11): reading and diffing 100 HLO modules under 1 s.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench.harness import best_of  # noqa: E402
from tests.support.hlo_builder import MLP_OPS, mlp_module  # noqa: E402
from tests.support.synthetic import StepProgram, training_capture, write_session  # noqa: E402
from xlaprof.analysis import analyze  # noqa: E402
from xlaprof.analysis.compiles.recompiles import explain_recompiles, with_changes  # noqa: E402
from xlaprof.hlo import hlo_modules  # noqa: E402
from xlaprof.session import Session  # noqa: E402

RUNS = 3


def _best(work) -> float:
    return best_of(work, RUNS)[0]


def measure(modules: int, layers: int) -> dict:
    ops = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
    programs = [StepProgram(k + 1, f"{k + 1:032x}", mlp_module(k + 1, 8 + k, layers=layers), ops) for k in range(modules)]
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as tmp:
        run = write_session(tmp, "hlo", {"w0_9012": training_capture(steps=modules, devices=1, programs=programs)})
        session = Session.load(run)
        analysis = analyze(session)
        worker = analysis.workers[0]
        space = worker.worker.space
        assert len(analysis.recompiles) == 1 and analysis.recompiles[0].graphs == modules

        def parse():
            found = hlo_modules(space)
            for program in found.ids():
                assert found.get(program).signature.instruction_count > 0

        def explain():
            found = hlo_modules(space)
            with_changes(worker.compiles, found)
            explain_recompiles([(worker.worker.label, worker.compiles, found)])

        sizes = [len(p.hlo) for p in programs]
        instructions = analysis.workers[0].hlo.get(1).signature.instruction_count
        return {"modules": modules, "kb": sum(sizes) / len(sizes) / 1024, "instructions": instructions,
                "parse": _best(parse), "explain": _best(explain), "analyze": _best(lambda: analyze(Session.load(run)))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=100, help="compiled graphs (default 100)")
    parser.add_argument("--layers", default="1,60,250", help="hidden layers per module, comma-separated "
                                                             "(default 1,60,250: about 20, 260 and 1,000 instructions)")
    args = parser.parse_args(argv)
    print(f"{'modules':>8} {'KB each':>8} {'instr.':>7} | {'parse+sign. s':>13} {'explain s':>10} | {'analyze s':>10}")
    for layers in (int(x) for x in args.layers.split(",")):
        row = measure(args.modules, layers)
        print(f"{row['modules']:>8} {row['kb']:>8.1f} {row['instructions']:>7,} | {row['parse']:>13.3f} "
              f"{row['explain']:>10.3f} | {row['analyze']:>10.3f}")


if __name__ == "__main__":
    main()
