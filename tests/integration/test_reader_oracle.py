"""Our reader against xprof's trace-viewer conversion: the same events, name by name.

See ``tests/oracle.py`` for what xprof adds, renames and rebuilds, and how it is compared.
"""
from __future__ import annotations

import io

import pytest

from tests.support.oracle import xlaprof_event_counts, xprof_event_counts
from tests.support.reader_columns import columns
from tests.support.synthetic import XSpaceBuilder, training_capture, training_event_count
from xlaprof.xspace.reader import read_xspace, read_xspace_file

pytest.importorskip("xprof.convert.raw_to_tool_data")


def _assert_same(path: str) -> int:
    theirs, ours = xprof_event_counts(path), xlaprof_event_counts(path)
    differing = {key: (theirs[key], ours[key]) for key in set(theirs) | set(ours) if theirs[key] != ours[key]}
    assert not differing, f"(xprof, xlaprof) counts differ: {sorted(differing.items())[:20]}"
    return sum(ours.values())


@pytest.mark.parametrize("args", [
    dict(steps=12, devices=4, ops_per_step=6, read_every=1, recompile_every=0),
    dict(steps=9, devices=2, ops_per_step=3, read_every=3, recompile_every=4, seed=5),
    dict(steps=4, devices=1, ops_per_step=50, read_every=0),
])
def test_tpu_shaped_training_captures(tmp_path, args):
    path = tmp_path / "w.xplane.pb"
    path.write_bytes(training_capture(**args))
    shape = {k: v for k, v in args.items() if k != "seed"}  # the count does not depend on the seed
    assert _assert_same(str(path)) == training_event_count(**shape)


def test_instants_threads_and_stats(tmp_path):
    """Zero-length events (instants), several threads, string and numeric stats."""
    builder = XSpaceBuilder()
    builder.task_environment(1000.0)
    host = builder.plane("/host:CPU")
    python = host.line("python")
    python.event("train_step", 10, 300, step_num=41, source="a.py:1", _r=1)
    python.event("forward", 20, 50, source="a.py:2")
    python.event("ThreadpoolListener::Record", 30, 0)
    pool = host.line("tf_XLAPjRtCpuClient/2", offset_ns=5000)
    pool.event("ThunkExecutor::Execute", 100, 40, hlo_module="m")
    pool.event("D2H Dispatch", 150, 0)
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(builder.to_bytes())
    ours = xlaprof_event_counts(str(path))
    assert ours[("/host:CPU", "python", "ThreadpoolListener::Record", "i")] == 1
    assert ours[("/host:CPU", "python", "train_step", "X")] == 1
    assert _assert_same(str(path)) == 5


def test_real_capture_matches_xprof(request):
    """A real torch_xla capture; ``real_capture_path`` comes from the suite's conftest."""
    try:
        path = request.getfixturevalue("real_capture_path")
    except pytest.FixtureLookupError:
        pytest.skip("no real_capture_path fixture (a real torch_xla capture) in this suite")
    counts = xlaprof_event_counts(path)
    assert sum(counts.values()) > 0
    assert _assert_same(path) == sum(counts.values())


def test_a_real_capture_read_in_small_pieces_gives_the_same_columns(real_capture_path):
    """Lines cut every 256 bytes (events, stats and line fields split across pieces) against the
    file's lines read whole, on a real torch_xla capture (its host plane carries stats)."""
    with open(real_capture_path, "rb") as handle:
        data = handle.read()
    whole = read_xspace(data)
    assert whole.plane("/host:CPU") is not None and len(whole.plane("/host:CPU").stats.value) > 0
    assert columns(read_xspace_file(io.BytesIO(data), len(data), source="x", chunk_bytes=256)) == columns(whole)
