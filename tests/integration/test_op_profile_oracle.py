"""The op profile against xprof on the same capture: per-op totals agree within 1%.

TPU-shaped captures: xprof's HLO stats tool, per (program, op): occurrences, total and self time.
Real CPU-device captures: xprof has no HLO stats there (no device planes), so its trace viewer's
thunk events (those carrying an ``hlo_op``) are summed by op name. See ``tests/support/oracle.py``.
"""
from __future__ import annotations

from collections import Counter

import pytest

from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.oracle import xprof_hlo_stats, xprof_op_totals
from tests.support.synthetic import StepProgram, TrainingShape, training_capture
from xlaprof.analysis import analyze
from xlaprof.session import Session

pytest.importorskip("xprof.convert.raw_to_tool_data")
TOLERANCE = 0.01


def test_tpu_op_profile_matches_xprof_hlo_stats(tmp_path):
    ops = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
    programs = [StepProgram(100 + b, f"{b:032x}", mlp_module(100 + b, b), ops) for b in (8, 16, 8, 24, 16, 8)]
    path = tmp_path / "w0_9012.xplane.pb"
    path.write_bytes(training_capture(steps=len(programs), devices=3, programs=programs, seed=4,
                                      shape=TrainingShape(jitter_us=200.0)))
    theirs = xprof_hlo_stats(str(path))
    ours = {(g.program_id, op.name): (op.occurrences, op.total_us, op.self_us)
            for g in analyze(Session.load(str(path))).device_profile.graphs for op in g.ops}
    assert set(theirs) == set(ours) and len(ours) == 15
    for key, (count, total, self_us) in theirs.items():
        assert ours[key][0] == count
        assert ours[key][1] == pytest.approx(total, rel=TOLERANCE)
        assert ours[key][2] == pytest.approx(self_us, rel=TOLERANCE)


@pytest.mark.torch_xla
def test_real_cpu_op_totals_match_xprof(real_capture_path):
    theirs = xprof_op_totals(real_capture_path)
    ours: Counter[str] = Counter()
    for graph in analyze(Session.load(real_capture_path)).device_profile.graphs:
        for op in graph.ops:
            ours[op.name] += op.total_us
    assert len(ours) >= 10 and set(ours) == set(theirs)
    for name, total in theirs.items():
        assert ours[name] == pytest.approx(total, rel=TOLERANCE), name
