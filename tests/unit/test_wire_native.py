"""The C decoder of lines and events (``xspace/_wire.c``) gives what the numpy one gives: the same
columns for whole captures, and for mutated captures the same columns or the same kind of error,
never a crash (the C code reads untrusted bytes)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.reader_columns import columns
from tests.support.synthetic import bench_capture, training_capture
from xlaprof.errors import BadProfileError
from xlaprof.xspace import wire
from xlaprof.xspace.file_index import index_space, line_pieces
from xlaprof.xspace.reader import read_xspace, read_xspace_file

CAPTURE = training_capture(steps=16, devices=2, read_every=1, recompile_every=5, seed=7, sampled=True)


def _outcome(data: bytes, native: bool, monkeypatch) -> object:
    with monkeypatch.context() as patch:
        if not native:
            patch.setattr(wire, "_native", None)
        try:
            return columns(read_xspace(data))
        except BadProfileError:
            return BadProfileError


def test_setup_built_the_c_decoder():
    assert wire._native is not None, "xlaprof/xspace/_wire.c did not build: run ./run.sh setup (needs a C compiler)"


@pytest.mark.parametrize("data", [CAPTURE, bench_capture(60_000, seed=2)[0]], ids=["cpu-host-stats", "tpu"])
def test_whole_captures_decode_to_the_same_columns(data, monkeypatch):
    native = _outcome(data, True, monkeypatch)
    assert native is not BadProfileError and native == _outcome(data, False, monkeypatch)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_captures_decode_alike_or_fail_alike(monkeypatch, data):
    mutated = bytearray(CAPTURE)
    at = data.draw(st.integers(0, len(mutated) - 1))
    mutation = data.draw(st.sampled_from(["flip", "truncate", "splice"]))
    if mutation == "flip":
        for offset in data.draw(st.lists(st.integers(0, 32), min_size=1, max_size=6)):
            mutated[min(at + offset, len(mutated) - 1)] ^= data.draw(st.integers(1, 255))
    elif mutation == "truncate":
        del mutated[at:]
    else:
        mutated[at:at] = data.draw(st.binary(min_size=1, max_size=32))
    assert _outcome(bytes(mutated), True, monkeypatch) == _outcome(bytes(mutated), False, monkeypatch)


@pytest.mark.parametrize("chunk_bytes", [61, 4096])
def test_pieces_cut_anywhere_decode_alike(chunk_bytes, monkeypatch):
    import io

    native = columns(read_xspace_file(io.BytesIO(CAPTURE), len(CAPTURE), source="x", chunk_bytes=chunk_bytes))
    monkeypatch.setattr(wire, "_native", None)
    assert native == columns(read_xspace_file(io.BytesIO(CAPTURE), len(CAPTURE), source="x", chunk_bytes=chunk_bytes))


def test_every_lines_events_and_stats_decode_alike_field_by_field(monkeypatch):
    import io

    handle = io.BytesIO(CAPTURE)
    decoded = {True: [], False: []}
    for native in (True, False):
        with monkeypatch.context() as patch:
            if not native:
                patch.setattr(wire, "_native", None)
            for plane in index_space(handle, len(CAPTURE)).planes:
                for offset, length in plane.lines:
                    for buf, starts, ends, others in line_pieces(handle, offset, length, 997):
                        raw = wire.decode_events(buf, starts, ends)
                        order = np.argsort(raw.stat_start, kind="stable")  # encoding order
                        decoded[native].append([starts.tolist(), ends.tolist(), others] + [
                            getattr(raw, name).tolist() for name in ("metadata_id", "offset_ps", "duration_ps",
                                                                     "aggregated")] + [
                            raw.stat_event[order].tolist(), raw.stat_start[order].tolist(), raw.stat_len[order].tolist()])
    assert sum(len(piece[-1]) for piece in decoded[True]) > 100  # stats were compared
    assert decoded[True] == decoded[False]


def test_a_stat_past_the_end_of_its_buffer_is_a_decode_error_not_an_index_error():
    # What a mutated capture found: a stat whose range, from a corrupt length, ends past the buffer.
    buf = np.zeros(16, np.uint8)
    buf[:2] = (wire._STAT_METADATA << 3, 5)  # metadata_id = 5, then zeros
    with pytest.raises(ValueError, match="past the end"):
        wire.decode_stats(buf, np.array([0, 12]), np.array([2, 8]))
    assert wire.decode_stats(buf, np.array([0]), np.array([2])).metadata_id.tolist() == [5]
