"""The analysis of one capture needs a bounded number of bytes per event beyond the reader's columns
(issue 20, item 2: a 2 GB capture analyses within about 1 GB): the peak of what ``analyze``
allocates, kept or temporary, measured by tracemalloc (numpy reports its arrays to it) on captures of
a few hundred thousand events, with the scans' blocks (``events.SCAN_ROWS``) made small so that
what grows with the events shows, not a block's fixed share."""
from __future__ import annotations

import tracemalloc

import pytest

from tests.support.synthetic import StepProgram, training_capture, write_session, write_wide_capture
from xlaprof.analysis import analyze
from xlaprof.analysis.device import device_profile, device_timeline
from xlaprof.session import Session
from xlaprof.xspace import events

BLOCK = 1 << 16  # rows a scan takes at a time in these tests (a few MB of temporaries)


def _analysis_peak_per_event(path: str) -> float:
    session = Session.load(path)
    tracemalloc.start()
    try:
        analyze(session)
        return tracemalloc.get_traced_memory()[1] / session.workers[0].space.event_count
    finally:
        tracemalloc.stop()


@pytest.fixture
def small_blocks(monkeypatch):
    for module in (events, device_timeline, device_profile):
        monkeypatch.setattr(module, "SCAN_ROWS", BLOCK)


def test_a_capture_of_one_op_line_analyses_in_a_few_bytes_an_event(tmp_path, small_blocks):
    """``bench_big_capture.py``'s capture: 300k ops on a TPU line without a module line. Measured:
    15 bytes an event (the busy events' int32 rows, 4, and a block's merge); before: 106 (the ops
    kept as program runs, sorting temporaries of whole columns)."""
    path = str(tmp_path / "w_9012.xplane.pb")
    write_wide_capture(path, 300_000)
    assert _analysis_peak_per_event(path) < 24


def test_a_tpu_shaped_capture_of_many_ops_analyses_in_bounded_bytes_an_event(tmp_path, small_blocks):
    """4 chips running 100-op programs (module and op lines, op metadata naming the program), 250k
    events: the device profile's per-op arrays (one device's at a time) dominate. Measured: 24
    bytes an event; before: 52 (every device's op rows and programs at once, int64, and the nesting
    walk's sort)."""
    ops = tuple((f"fusion.{i}", "loop fusion", 0.01) for i in range(100))
    programs = [StepProgram(100 + k, f"{k:032x}", b"", ops) for k in range(3)]
    data = training_capture(steps=600, devices=4, programs=[programs[k % 3] for k in range(600)])
    path = write_session(str(tmp_path), "tpu", {"w_9012": data})
    assert _analysis_peak_per_event(path) < 36
