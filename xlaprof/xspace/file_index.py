"""Where each plane and line of a capture lies in its file, found without reading its events.

Contract:
- ``index_space(handle, size)`` walks an XSpace's top-level fields and each plane's fields through
  a seekable binary file object (a local file, an fsspec file, ``io.BytesIO``) of ``size`` bytes
  and returns a ``SpaceIndex``: per plane, its fields but the lines parsed as an ``XPlane``
  (``header``: name, metadata, stats; serializers write them *after* the lines) and each line's
  ``(offset, length)`` in the file; the space's errors, warnings and hostnames. Lines are skipped
  by their length: the walk reads a few bytes per line and per metadata field, never an event.
- ``line_pieces(handle, offset, length, chunk_bytes)`` reads one line's encoding in pieces of
  about ``chunk_bytes`` (more only for a single field larger than that) and yields, per piece,
  ``(buffer, event starts, event ends, other fields)`` (``wire.split_line``); a line's header
  fields (id, name, timestamp) come as the encodings of its other fields, in any piece.
- Wire bytes that do not walk (a field past its message's end, a bad wire type) raise
  ``ValueError``; a file shorter than its fields say raises ``ValueError`` too.
- Bounded work on any bytes: a tag that no serializer writes (field number 0 or past 2^29-1,
  wire types 3, 4, 6 and 7) is rejected where it is met, so a zero-filled file fails at its first
  byte. Nothing is kept per field: the fields of the space and of a plane but the lines are kept
  as the ranges they cover (adjacent fields as one range) and read once their message has walked.
  Limits, each a ``ValueError`` saying which: ``MAX_PLANES`` planes and ``MAX_LINES`` lines a
  file; ``MAX_FIELDS_WALKED`` fields walked one by one a file (planes, lines, the fields before a
  plane's metadata, which is parsed in one piece); ``METADATA_BYTES`` of a plane's fields besides
  its lines; ``MAX_SPACE_REST_BYTES`` of the space's fields besides its planes, and
  ``MAX_SPACE_REST_FIELDS`` of them (a capture has a hostname and a few errors or warnings: a
  file of millions of empty ones is refused at once, not after a walk of a megabyte of them). The index so costs
  each plane's metadata (as protobuf objects) and about 100 bytes a line, whatever the file holds.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from xlaprof.xspace import schema, wire

_SPACE_PLANES, _PLANE_LINES = 1, 3
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
WINDOW_BYTES = 2**20  # the block of the file that indexing reads at a time
METADATA_BYTES = 256 * 2**20  # the most of a plane's fields besides its lines (read in one piece)
MAX_SPACE_REST_BYTES = 2**20  # the most of the space's fields besides its planes
MAX_SPACE_REST_FIELDS = 2**12  # and the most of them by count
MAX_FIELDS_WALKED = 2**22  # fields walked one by one in a file (planes, lines, fields before a plane's metadata)
MAX_PLANES = 2**14  # planes in a file (a TPU pod host has a few hundred)
MAX_LINES = 2**18  # lines in a file, all planes together (a host plane has one per thread)
MAX_FIELD_NUMBER = 2**29 - 1  # protobuf's largest
_WIRE_TYPES = frozenset((_VARINT, _FIXED64, _LENGTH, _FIXED32))  # groups (3, 4) are in no xplane.proto


@dataclass
class PlaneIndex:
    header: object  # schema.XPlane without its lines
    lines: list[tuple[int, int]]  # (offset, length) of each line's encoding in the file


@dataclass
class SpaceIndex:
    planes: list[PlaneIndex]
    rest: object  # schema.XSpace without its planes: errors, warnings, hostnames


def index_space(handle, size: int) -> SpaceIndex:
    window = _Window(handle)
    planes = []
    rest = _Ranges("the space's fields besides its planes", MAX_SPACE_REST_BYTES, MAX_SPACE_REST_FIELDS)
    lines = [0]  # lines indexed so far, all planes together
    for number, start, payload, end in _walk(window, 0, size):
        if number == _SPACE_PLANES:
            if len(planes) == MAX_PLANES:
                raise ValueError(f"more than {MAX_PLANES:,} planes")
            planes.append(_index_plane(window, payload, end, lines))
        else:
            rest.add(start, end)
    return SpaceIndex(planes, schema.XSpace.FromString(rest.read(window)))


def _index_plane(window: _Window, start: int, end: int, line_count: list[int]) -> PlaneIndex:
    lines, header = [], _Ranges("a plane's fields besides its lines", METADATA_BYTES)
    for number, at, payload, field_end in _walk(window, start, end):
        if number == _PLANE_LINES:
            line_count[0] += 1
            if line_count[0] > MAX_LINES:
                raise ValueError(f"more than {MAX_LINES:,} lines")
            lines.append((payload, field_end - payload))
            continue
        if number > _PLANE_LINES and end - at <= METADATA_BYTES - header.bytes:
            # Serializers write fields in number order, the metadata after the lines: all of it at
            # once, unless a line follows after all.
            try:
                tail = schema.XPlane.FromString(header.read(window) + window.read(at, end - at))
            except DecodeError:
                tail = None
            if tail is not None and not len(tail.lines):
                return PlaneIndex(tail, lines)
        header.add(at, field_end)
    return PlaneIndex(schema.XPlane.FromString(header.read(window)), lines)


class _Ranges:
    """The byte ranges of a message's fields kept for parsing, adjacent ones merged: one record a
    run of fields, at most ``limit`` bytes in all and ``max_fields`` fields (``what`` names them in
    the error)."""

    def __init__(self, what: str, limit: int, max_fields: int | None = None) -> None:
        self.what, self.limit, self.max_fields, self.spans, self.bytes, self.fields = what, limit, max_fields, [], 0, 0

    def add(self, start: int, end: int) -> None:
        self.bytes += end - start
        self.fields += 1
        if self.bytes > self.limit:
            raise ValueError(f"{self.what} take more than {self.limit // 2**20} MiB")
        if self.max_fields is not None and self.fields > self.max_fields:
            raise ValueError(f"{self.what} are more than {self.max_fields:,}")
        if self.spans and self.spans[-1][1] == start:
            self.spans[-1][1] = end
        else:
            self.spans.append([start, end])

    def read(self, window: _Window) -> bytes:
        return b"".join(window.read(start, end - start) for start, end in self.spans)


def line_pieces(handle, offset: int, length: int, chunk_bytes: int) -> Iterator[tuple]:
    pos, end, want = offset, offset + length, chunk_bytes
    while pos < end:
        size = min(want, end - pos)
        buf = np.zeros(size + wire.PAD, np.uint8)
        handle.seek(pos)
        if handle.readinto(memoryview(buf)[:size]) != size:
            raise ValueError("the file ends inside a line")
        consumed, starts, ends, others = wire.split_line(buf, size)
        if consumed == 0:  # one field larger than the piece: read it whole
            if size == end - pos:
                raise ValueError("a field runs past the end of its line")
            want = 2 * size
            continue
        yield buf, starts, ends, others
        pos, want = pos + consumed, chunk_bytes


class _Window:
    """Reads of a file through one block of it held at a time: the many small fields of a plane's
    metadata cost no seek each."""

    def __init__(self, handle, block: int = WINDOW_BYTES) -> None:
        self.handle, self.block, self.start, self.data = handle, block, 0, b""
        self.fields = 0  # fields walked so far (``_walk``), against MAX_FIELDS_WALKED

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer only at the file's end)."""
        at = offset - self.start
        if at < 0 or at + length > len(self.data):
            if length > self.block:
                self.handle.seek(offset)
                return self.handle.read(length)
            self.handle.seek(offset)
            self.start, self.data, at = offset, self.handle.read(self.block), 0
        return self.data[at:at + length]


def _walk(window: _Window, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """The fields of the message at ``[start, end)``: (number, field start, payload start, end)."""
    pos = start
    while pos < end:
        head = window.read(pos, min(20, end - pos))
        tag, at = _varint(head, 0)
        wire_type = tag & 7
        if not 0 < tag >> 3 <= MAX_FIELD_NUMBER or wire_type not in _WIRE_TYPES:
            raise ValueError(f"an invalid field tag {tag} at byte {pos}")
        if wire_type == _VARINT:
            _, payload_end = _varint(head, at)
            payload = at
        elif wire_type in (_FIXED64, _FIXED32):
            payload, payload_end = at, at + (8 if wire_type == _FIXED64 else 4)
        elif wire_type == _LENGTH:
            length, payload = _varint(head, at)
            payload_end = payload + length
        if pos + payload_end > end:
            raise ValueError("a field runs past the end of its message")
        window.fields += 1
        if window.fields > MAX_FIELDS_WALKED:
            raise ValueError(f"more than {MAX_FIELDS_WALKED:,} fields besides events and metadata")
        yield tag >> 3, pos, pos + payload, pos + payload_end
        pos += payload_end


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(at, min(at + 10, len(data))):
        value |= (data[i] & 0x7F) << shift
        if data[i] < 0x80:
            return value, i + 1
        shift += 7
    raise ValueError("a cut or over-long varint")
