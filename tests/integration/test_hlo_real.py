"""Compiled HLO of real torch_xla captures: a batch-size cycle caught from the first step by the
step-scheduled capture and explained with its sizes and the line that makes the batch, and a
recompile caused by a 0/1 scalar only (a fixed-shape worker's op profile: test_workloads.py)."""
from __future__ import annotations

import json
import os
import textwrap

import pytest

from tests.support.workers import run_cli, run_python
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.session import Session

pytestmark = pytest.mark.torch_xla

SCRIPT = textwrap.dedent('''
    import json, sys, torch, torch_xla, xlaprof
    dev = torch_xla.device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def make_batch(step):
        return torch.randn([8, 12, 16, 20, 24][step % 5], 64).to(dev)  # the batch line

    def train(x, threshold=None):
        h = model(x)
        loss = h.mean() if threshold is None else h.mean() + (h > threshold).float().mean()  # the threshold line
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()

    with xlaprof.profile(sys.argv[1], name="cycle", steps=range(0, 10)) as cycle:
        for step in range(15):
            with xlaprof.step(step):
                train(make_batch(step))
    with xlaprof.profile(sys.argv[1], name="threshold", steps=range(0, 6)) as constant:
        for step in range(6):
            with xlaprof.step(step):
                train(torch.randn(8, 64).to(dev), threshold=float(step % 2))
    with xlaprof.profile(sys.argv[1], name="never", steps=range(100, 110)) as never:
        for step in range(2):
            with xlaprof.step(step):
                pass
    print(json.dumps({"cycle": cycle.path, "constant": constant.path, "never": never.path}))
''')


def _line(needle: str) -> int:
    return next(i for i, line in enumerate(SCRIPT.splitlines(), 1) if needle in line)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("hlo_real")
    script = folder / "train.py"
    script.write_text(SCRIPT)
    result = run_python(f"import runpy, sys; sys.argv = ['train.py', {str(folder / 'logs')!r}]; "
                        f"runpy.run_path({str(script)!r}, run_name='__main__')",
                        env={"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    paths = json.loads(result.stdout.strip().splitlines()[-1])
    assert paths.pop("never") is None  # no step of its range ran: nothing written, and said once
    assert result.stderr.count("no step of range(100, 110) ran inside the block; nothing was captured") == 1
    assert sorted(os.listdir(folder / "logs" / "plugins" / "profile")) == ["cycle", "threshold"]
    return paths


def test_a_shape_cycle_is_caught_from_the_first_step_and_explained(sessions):
    analysis = analyze(Session.load(sessions["cycle"]))
    report = analysis_json(analysis)
    (steps,) = report["steps"].values()
    assert [s["step"] for s in steps] == list(range(10))  # the scheduled window: steps 0-9 only
    compiles = report["compiles"]
    assert compiles["count"] == 5 and compiles["before_window"] == 0
    (why,) = compiles["explained"]
    assert why["kind"] == "shape" and why["span"] == "train_step"
    assert why["sizes"] == {"B": [8, 12, 16, 20, 24]} and why["buckets"] == {"B": [8, 16, 24]}
    (batch_input,) = why["inputs"]
    assert batch_input["pattern"] == "f32[B,64]"
    assert batch_input["source"].endswith(f"train.py:{_line('the batch line')}")
    assert why["summary"].endswith("B = 8, 12, 16, 20, 24 across 5 compiles.")
    # The cycle's second pass reuses the cached graphs: five programs, each run twice.
    assert sorted(g["executions"] for g in report["graphs"]) == [2] * 5
    assert all(g["compiled_in_window"] for g in report["graphs"])
    lines = [row["source"] for row in report["device_time_by_line"]]
    assert any(line.endswith(f"train.py:{_line('def train')+1}") for line in lines)  # h = model(x)
    result = run_cli("analyze", sessions["cycle"])
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # the report wraps long lines
    assert "5 compile(s) in this window, 0 before it" in text
    assert "B = 8, 12, 16, 20, 24 across 5 compiles" in text and "multiples of 8: 8, 16, 24" in text


def test_a_recompile_from_a_zero_or_one_scalar_is_a_constant_change(sessions):
    report = analysis_json(analyze(Session.load(sessions["constant"])))
    (why,) = report["compiles"]["explained"]
    assert why["kind"] == "constant" and why["compiles"] == 2
    (constant,) = why["constants"]
    assert constant["values"] == [0.0, 1.0]
    assert constant["source"].endswith(f"train.py:{_line('the threshold line')}")
    assert "XLA_NO_SPECIAL_SCALARS=1" in why["advice"]
    assert report["compile_events"][1]["changed"].startswith("constant 0 -> 1 at ")
