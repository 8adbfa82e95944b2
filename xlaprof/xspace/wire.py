"""Columnar decoding of XEvents and XStats straight from their protobuf wire bytes, with numpy.

Why: a TPU capture holds millions of events, and touching each one as a protobuf message from
Python costs about a microsecond. Here the XSpace is parsed with ``XSpaceRaw``, a variant of
``xspace_schema.XSpace`` in which ``XLine.events`` (field 4) is declared ``repeated bytes``: each
event stays its own wire encoding, and all events of a plane are decoded at once by walking the
fields of every message in lock-step (one numpy pass per field position, not per event).

Contract:
- ``XSpaceRaw``: parses any XSpace; every other field keeps the meaning of ``xspace_schema``.
- ``decode_events(blobs)`` -> ``RawEvents``: ``metadata_id``, ``offset_ps``, ``duration_ps`` (int64),
  ``aggregated`` (bool: the event carries ``num_occurrences`` instead of an offset), and the
  stats' encodings as (``stat_event``, ``stat_start``, ``stat_len``) into ``buffer``.
- ``leading_stat_ids(buffer, starts, lengths)``: each stat's metadata id from its leading field
  alone (-1 where it does not lead), to choose which stats to decode.
- ``decode_stats(buffer, starts, lengths)`` -> ``RawStats``: per stat ``metadata_id``, ``kind``
  (the XStat field number of its value, 0 when unset) and ``bits`` (the varint or fixed64 value,
  uint64) or, for strings and bytes, (``start``, ``length``) into ``buffer``.
- Wire bytes that do not decode (a bad wire type, a field running past its message, an
  over-long varint) raise ``ValueError``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from xlaprof.xspace import schema as xspace_schema

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_EVENT_METADATA, _EVENT_OFFSET, _EVENT_DURATION, _EVENT_STATS, _EVENT_OCCURRENCES = 1, 2, 3, 4, 5
_STAT_METADATA = 1
STAT_DOUBLE, STAT_UINT64, STAT_INT64, STAT_STR, STAT_BYTES, STAT_REF = 2, 3, 4, 5, 6, 7
_PAD = bytes(16)  # reads past the last message stay inside the array; overruns are checked


def _raw_space_class() -> type:
    file = descriptor_pb2.FileDescriptorProto()
    xspace_schema.XSpace.DESCRIPTOR.file.CopyToProto(file)
    line = next(m for m in file.message_type if m.name == "XLine")
    events = next(f for f in line.field if f.number == _EVENT_STATS)
    events.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    events.ClearField("type_name")
    pool = descriptor_pool.DescriptorPool()  # its own pool: the names may repeat the real schema's
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.XSpace"))


XSpaceRaw = _raw_space_class()


@dataclass
class _Fields:
    """Every field of a batch of messages: one row per field occurrence."""

    owner: np.ndarray  # int64: which message
    number: np.ndarray  # int64: field number
    bits: np.ndarray  # uint64: varint / fixed value (the length for length-delimited fields)
    start: np.ndarray  # int64: payload start in the buffer (length-delimited fields)


@dataclass
class RawEvents:
    buffer: np.ndarray  # uint8: all event encodings of the batch, concatenated
    metadata_id: np.ndarray
    offset_ps: np.ndarray
    duration_ps: np.ndarray
    aggregated: np.ndarray
    stat_event: np.ndarray  # int64: the event of each stat
    stat_start: np.ndarray  # int64: the stat's encoding in buffer
    stat_len: np.ndarray


@dataclass
class RawStats:
    metadata_id: np.ndarray  # int64
    kind: np.ndarray  # int64: STAT_* field number of the value, 0 when unset
    bits: np.ndarray  # uint64: the value of numeric kinds (a double's IEEE bits)
    start: np.ndarray  # int64: STAT_STR / STAT_BYTES payload in the buffer
    length: np.ndarray


def _words(buf: np.ndarray) -> np.ndarray:
    """``words[i]``: the 8 bytes at ``buf[i:i + 8]`` as a little-endian uint64 (an unaligned view)."""
    return np.ndarray((buf.size - 7,), "<u8", buf, 0, (1,))


_LOW7 = [np.uint64(0x7F << (8 * i)) for i in range(8)]
_STOP_BITS = np.uint64(0x8080808080808080)


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints starting at ``pos``: (values as uint64, encoded lengths).

    Varints of up to 8 bytes (all but negative or huge numbers) are decoded from one 64-bit word
    each; longer ones byte by byte."""
    word = _words(buf)[pos]
    stops = ~word & _STOP_BITS
    lowest = stops & (~stops + np.uint64(1))  # the first byte without a continuation bit
    short = stops != 0
    # lowest is 0x80 << 8k for a (k+1)-byte varint; k from its float64 exponent (7 + 8k).
    exponent = (lowest.astype(np.float64).view(np.int64) >> 52) - 1023
    length = np.where(short, (exponent - 7) // 8 + 1, 0)
    keep = np.where(length >= 8, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << (np.uint64(8) * length.astype(np.uint64))) - np.uint64(1))
    word &= keep
    value = word & _LOW7[0]
    for i in range(1, 8):
        value |= (word & _LOW7[i]) >> np.uint64(i)
    long = np.flatnonzero(~short)
    if long.size:
        value[long], length[long] = _long_varints(buf, pos[long])
    return value, length


def _tags(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Field tags: one byte for fields 1-15 (all of XEvent's and XStat's), else a varint."""
    tag = buf[pos].astype(np.uint64)
    if np.all(tag < 0x80):
        return tag, np.ones(pos.size, np.int64)
    return _varints(buf, pos)


def _long_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    value = np.zeros(pos.size, np.uint64)
    length = np.zeros(pos.size, np.int64)
    live = np.arange(pos.size)
    for i in range(10):
        byte = buf[np.minimum(pos[live] + i, buf.size - 1)].astype(np.uint64)
        value[live] |= (byte & np.uint64(0x7F)) << np.uint64(7 * i)
        done = byte < 0x80
        length[live[done]] = i + 1
        live = live[~done]
        if not live.size:
            return value, length
    raise ValueError("a varint longer than 10 bytes")


def _fixed(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    word = _words(buf)[pos]
    return word if width == 8 else word & np.uint64(0xFFFFFFFF)


def _fields(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> _Fields:
    """Walk all messages ``buf[starts[i]:ends[i]]`` together, one field position per pass."""
    parts: list[tuple] = []
    pos = starts.astype(np.int64)
    live = np.flatnonzero(pos < ends)
    while live.size:
        tag, tag_len = _tags(buf, pos[live])
        wire = (tag & np.uint64(7)).astype(np.int64)
        at = pos[live] + tag_len
        bits = np.zeros(live.size, np.uint64)
        step = np.zeros(live.size, np.int64)
        for kind, width in ((_VARINT, 0), (_FIXED64, 8), (_LENGTH, 0), (_FIXED32, 4)):
            pick = np.flatnonzero(wire == kind)
            if not pick.size:
                continue
            if width:
                bits[pick], step[pick] = _fixed(buf, at[pick], width), width
            else:
                bits[pick], step[pick] = _varints(buf, at[pick])
        if np.any((wire != _VARINT) & (wire != _FIXED64) & (wire != _LENGTH) & (wire != _FIXED32)):
            raise ValueError("an unsupported wire type")
        payload = at + step
        # A length-delimited field's value is its length; its payload follows.
        skip = np.where(wire == _LENGTH, bits.astype(np.int64), 0)
        pos[live] = payload + skip
        if np.any((pos[live] > ends[live]) | (skip < 0)):
            raise ValueError("a field runs past the end of its message")
        parts.append((live, (tag >> np.uint64(3)).astype(np.int64), bits, payload))
        live = live[pos[live] < ends[live]]
    if not parts:
        z = np.zeros(0, np.int64)
        return _Fields(z, z, np.zeros(0, np.uint64), z)
    return _Fields(*(np.concatenate(col) for col in zip(*parts)))


def _last(fields: _Fields, number: int, size: int) -> np.ndarray:
    """Per message, the value of an int64 scalar field (0 where absent)."""
    column = np.zeros(size, np.int64)
    pick = fields.number == number
    column[fields.owner[pick]] = fields.bits[pick].view(np.int64)
    return column


def decode_events(blobs) -> RawEvents:
    count = len(blobs)
    lengths = np.fromiter(map(len, blobs), np.int64, count)
    buf = np.frombuffer(b"".join(blobs) + _PAD, np.uint8)
    ends = np.cumsum(lengths)
    fields = _fields(buf, ends - lengths, ends)
    stats = fields.number == _EVENT_STATS
    return RawEvents(buf, _last(fields, _EVENT_METADATA, count), _last(fields, _EVENT_OFFSET, count),
                     _last(fields, _EVENT_DURATION, count),
                     np.isin(np.arange(count), fields.owner[fields.number == _EVENT_OCCURRENCES]),
                     fields.owner[stats], fields.start[stats], fields.bits[stats].astype(np.int64))


def leading_stat_ids(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each stat's metadata id read from its first field alone (serializers write fields in number
    order, so ``metadata_id``, field 1, comes first): a cheap look before ``decode_stats``. -1 where
    a stat does not start with that field, so a caller must decode it to know."""
    ids = np.full(starts.size, -1, np.int64)
    lead = np.flatnonzero((lengths > 0) & (buf[starts] == (_STAT_METADATA << 3 | _VARINT)))
    if lead.size:
        ids[lead] = _varints(buf, starts[lead] + 1)[0].view(np.int64)
    return ids


def decode_stats(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> RawStats:
    count = starts.size
    fields = _fields(buf, starts, starts + lengths)
    values = (fields.number >= STAT_DOUBLE) & (fields.number <= STAT_REF)
    kind = np.zeros(count, np.int64)
    kind[fields.owner[values]] = fields.number[values]
    start = np.zeros(count, np.int64)
    start[fields.owner[values]] = fields.start[values]
    bits = np.zeros(count, np.uint64)
    bits[fields.owner[values]] = fields.bits[values]
    # For strings and bytes the field's bits are its length.
    return RawStats(_last(fields, _STAT_METADATA, count), kind, bits, start, bits.astype(np.int64))
