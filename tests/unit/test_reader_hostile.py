"""Hostile capture files: bounded work and memory on any bytes. A zero-filled or sparse file fails
at its first byte in constant memory whatever its size; a valid capture followed by zeros, a line of
zeros, and files made of one small field repeated (records without events) fail where the bad bytes
begin, in a memory that does not grow with the file; structure-aware mutations of a real-shaped
capture (zero runs, huge lengths, deep nesting, repeated fields, invalid tags) are read or refused
with ``BadProfileError``, within the reader's budget (tracemalloc's peak)."""
from __future__ import annotations

import io
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.synthetic import training_capture, varint
from xlaprof.errors import BadProfileError
from xlaprof.session import storage
from xlaprof.xspace import file_index, reader, wire
from xlaprof.xspace.reader import read_xspace, read_xspace_file

MiB = 2**20
CONSTANT_BYTES = 4 * MiB  # the peak of refusing a file at its first bytes: a window of it and little else
PIECE_BUDGET = 64 * MiB  # a piece of a line (4 MiB) and its decoding, beyond what the capture holds


def _error_of_reading(path: str) -> str:
    """The error of reading the file at ``path``, which must be refused."""
    with storage.open_checked(path) as (handle, size), pytest.raises(BadProfileError) as error:
        read_xspace_file(handle, size, source=path)
    return str(error.value)


def _peak_of_reading(path: str) -> tuple[int, str]:
    """tracemalloc's peak while reading the file at ``path`` (which must be refused), and the error."""
    tracemalloc.start()
    try:
        message = _error_of_reading(path)
        return tracemalloc.get_traced_memory()[1], message
    finally:
        tracemalloc.stop()


def _sparse(path, head: bytes, size: int, tail: bytes = b"") -> str:
    """A file of ``size`` bytes: ``head``, zeros (a hole: no disk), then ``tail``."""
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size - len(tail))
        handle.seek(size - len(tail))
        handle.write(tail)
    return str(path)


@pytest.mark.parametrize("size", [2**30, 10 * 10**9], ids=["1GiB", "10GB"])
def test_a_zero_filled_file_fails_at_its_first_byte_in_constant_memory(tmp_path, size):
    path = _sparse(tmp_path / "zeros.xplane.pb", b"", size)
    peak, message = _peak_of_reading(path)
    assert "an invalid field tag 0 at byte 0" in message and path in message
    assert peak < CONSTANT_BYTES, peak


def test_a_capture_followed_by_zeros_fails_where_they_begin(tmp_path):
    data = training_capture(steps=10, devices=1)
    path = _sparse(tmp_path / "padded.xplane.pb", data, 256 * MiB)
    peak, message = _peak_of_reading(path)
    assert f"an invalid field tag 0 at byte {len(data)}" in message
    assert peak < CONSTANT_BYTES + 20 * len(data), peak


def _plane_with_line(line_length: int, tail: bytes) -> tuple[bytes, int]:
    """The head of a space whose one plane holds one line of ``line_length`` bytes (to follow the
    head), the plane's ``tail`` after the line; and the file's size."""
    line_head = varint(3 << 3 | 2) + varint(line_length)
    plane_length = len(line_head) + line_length + len(tail)
    head = varint(1 << 3 | 2) + varint(plane_length) + line_head
    return head, len(head) + line_length + len(tail)


def test_a_line_of_zeros_fails_at_its_first_piece(tmp_path):
    tail = b"\x12\x0d/device:TPU:0"  # the plane's name after its line, as serializers write it
    head, size = _plane_with_line(512 * MiB, tail)
    path = _sparse(tmp_path / "zero_line.xplane.pb", head, size, tail)
    peak, message = _peak_of_reading(path)
    assert "an invalid field tag" in message
    assert peak < PIECE_BUDGET, peak


@pytest.mark.parametrize("field,message", [
    (b"\x12\x00", f"the space's fields besides its planes are more than {file_index.MAX_SPACE_REST_FIELDS:,}"),
    (b"\x12" + varint(2**16) + b"e" * 2**16, "the space's fields besides its planes take more than 1 MiB"),  # 64 KiB errors
    (b"\x0a\x00", f"more than {file_index.MAX_PLANES:,} planes"),  # empty planes
])
def test_a_space_of_one_field_repeated_is_refused_in_bounded_memory(tmp_path, field, message):
    path = tmp_path / "repeated.xplane.pb"
    path.write_bytes(field * (4 * MiB // len(field)))
    peak, error = _peak_of_reading(str(path))
    assert message in error
    assert peak < 24 * MiB, peak  # 4 MiB of 2-byte fields cost 2M records (~200 MB) when kept per field


def test_a_line_of_one_small_field_repeated_is_refused_in_bounded_memory(tmp_path):
    body = b"\x08\x01" * (16 * MiB // 2)  # the line's id, 8M times
    tail = b"\x12\x0d/device:TPU:0"
    head, size = _plane_with_line(len(body), tail)
    path = tmp_path / "line_ids.xplane.pb"
    path.write_bytes(head + body + tail)
    peak, error = _peak_of_reading(str(path))
    assert f"a line with more than {wire.MAX_OTHER_FIELDS} fields besides its events" in error
    assert peak < PIECE_BUDGET, peak


def test_empty_lines_past_the_limit_are_refused(tmp_path):
    plane = b"\x1a\x00" * (file_index.MAX_LINES + 1) + b"\x12\x0d/device:TPU:0"
    path = tmp_path / "lines.xplane.pb"
    path.write_bytes(varint(1 << 3 | 2) + varint(len(plane)) + plane)
    assert f"more than {file_index.MAX_LINES:,} lines" in _error_of_reading(str(path))


# Structure-aware mutations: the capture's length-delimited fields (planes, lines, events, stats)
# are where a hostile file changes a length, repeats a record or nests one inside itself.
SEED = training_capture(steps=3, devices=1, sampled=True)
_CHILDREN = {0: {1: 1}, 1: {3: 2}, 2: {4: 3}, 3: {4: 4}}  # depth -> {field number: child depth}


def _fields(data: bytes, start: int = 0, end: int | None = None, depth: int = 0) -> list[tuple[int, int, int, int]]:
    """``(tag start, length start, payload start, end)`` of every length-delimited field of the
    space, its planes' lines, their events and the events' stats."""
    end = len(data) if end is None else end
    found, pos = [], start
    while pos < end:
        tag, at = _varint(data, pos)
        wire_type = tag & 7
        if wire_type == 2:
            length, payload = _varint(data, at)
            found.append((pos, at, payload, payload + length))
            child = _CHILDREN.get(depth, {}).get(tag >> 3)
            if child is not None:
                found += _fields(data, payload, payload + length, child)
            pos = payload + length
        else:
            pos = _varint(data, at)[1] if wire_type == 0 else at + (8 if wire_type == 1 else 4)
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


FIELDS = _fields(SEED)


@st.composite
def hostile_captures(draw) -> bytes:
    tag_at, length_at, payload, end = draw(st.sampled_from(FIELDS))
    data, kind = bytearray(SEED), draw(st.sampled_from(["zeros", "length", "nest", "repeat", "tag"]))
    if kind == "zeros":  # a run of zeros over or into the capture
        run = bytes(draw(st.integers(1, 64 * 1024)))
        data[payload:payload + (len(run) if draw(st.booleans()) else 0)] = run
    elif kind == "length":  # a length far past the end, or just past it
        length = draw(st.sampled_from([2**31, 2**62, 2**64 - 1, len(data) - payload + 1, end - payload + 1]))
        data[length_at:payload] = varint(length)
    elif kind == "nest":  # the field's payload wrapped in itself, deeper than any parser allows
        blob = bytes(data[payload:end])
        for _ in range(draw(st.integers(1, 3000))):
            blob = bytes(data[tag_at:length_at]) + varint(len(blob)) + blob
        data[tag_at:end] = blob
    elif kind == "repeat":  # a record repeated up to a MiB
        record = bytes(data[tag_at:end])
        data[tag_at:end] = record * draw(st.integers(2, max(2, MiB // len(record))))
    else:  # a tag no serializer writes: field 0, a group, wire types 6 and 7
        data[tag_at:tag_at] = draw(st.sampled_from([b"\x00", b"\x03", b"\x04", b"\x0e", b"\x0f", b"\x80\x00"]))
    return bytes(data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_captures())
def test_structure_aware_mutations_are_read_or_refused_within_the_budget(data):
    # Column blocks of 1 MiB, not 32: tracemalloc counts a block whole when it is allocated (the
    # system maps its pages only as they fill), which would hide the per-byte cost measured here.
    blocks, reader.COLUMN_BLOCK_BYTES = reader.COLUMN_BLOCK_BYTES, MiB
    tracemalloc.start()
    try:
        try:
            space = read_xspace_file(io.BytesIO(data), len(data), source="hostile")
        except BadProfileError:
            space = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        reader.COLUMN_BLOCK_BYTES = blocks
    # The budget: a piece and its decoding, a block per column, and per byte of the file at most
    # what 2-byte events cost in the columns and their decoding (the events a file really holds).
    assert peak < PIECE_BUDGET + 64 * len(data), f"peak {peak:,} bytes reading {len(data):,}"
    if space is not None:
        assert space.event_count <= len(data) // 2


def test_the_seed_is_read_whole():
    assert read_xspace(SEED).event_count > 0 and len(FIELDS) > 100


@pytest.mark.parametrize("native", [True, False], ids=["C", "numpy"])
@pytest.mark.parametrize("piece,message", [
    (bytes(64), "an invalid field tag"),  # field 0
    (b"\x08\x01\x0e", "an invalid field tag"),  # wire type 6 after a line id
    (b"\x22\x02\x00\x00", "an invalid field tag"),  # an event holding field 0
    (b"\x08\x01" * (wire.MAX_OTHER_FIELDS + 1), "fields besides its events"),
])
def test_both_line_decoders_refuse_invalid_tags_and_too_many_fields(monkeypatch, native, piece, message):
    if not native:
        monkeypatch.setattr(wire, "_native", None)
    buf = np.zeros(len(piece) + wire.PAD, np.uint8)
    buf[:len(piece)] = np.frombuffer(piece, np.uint8)
    with pytest.raises(ValueError, match=message):
        _, starts, ends, _ = wire.split_line(buf, len(piece))
        wire.decode_events(buf, starts, ends)
