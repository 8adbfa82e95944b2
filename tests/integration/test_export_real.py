"""``xlaprof export`` of a real capture of a real torch_xla worker, through the real CLI: each format,
read back by a reader that shares nothing with the exporter, holds as many events of each name
per plane as xprof's own conversion of the capture finds (the oracle), every event to the
nanosecond, the idle gaps by cause with their line, stack and finding, and the findings."""
from __future__ import annotations

from collections import Counter

import pytest

from tests.support.export_checks import assert_export_matches
from tests.support.oracle import xprof_event_counts
from tests.support.trace_readers import read_chrome, read_perfetto
from tests.support.workers import run_cli
from xlaprof.analysis import analyze
from xlaprof.session import Session

pytestmark = pytest.mark.torch_xla


def _by_plane_and_name(trace, label: str) -> Counter:
    counts = Counter()
    for track, slices in trace.slices.items():
        process = track.split(" / ", 1)[0]
        if process.startswith(label + " "):
            counts.update((process[len(label) + 1:], s[0]) for s in slices)
    return counts


@pytest.mark.parametrize("fmt,reader", [("perfetto", read_perfetto), ("chrome", read_chrome)])
def test_a_real_capture_exports_whole(real_logdir, real_capture_path, tmp_path, fmt, reader):
    out = str(tmp_path / f"trace.{fmt}")
    result = run_cli("export", real_logdir, "--format", fmt, "-o", out)
    assert result.returncode == 0, result.stderr
    trace = reader(out)
    analysis = analyze(Session.load(real_logdir))
    assert_export_matches(trace, analysis, tolerance_ns=1)
    oracle = Counter()
    for (plane, _line, name, _phase), n in xprof_event_counts(real_capture_path).items():
        oracle[(plane, name)] += n
    assert _by_plane_and_name(trace, analysis.workers[0].worker.label) == oracle
    gaps = [s for track, slices in trace.slices.items() if track.endswith("idle by cause") for s in slices]
    assert len(gaps) == analysis.gap_count
    assert any(s[3].get("stack") and s[3].get("finding") for s in gaps)  # the sampler named lines
    assert f"{len(analysis.findings)} findings" in result.stdout
