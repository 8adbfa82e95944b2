"""Columnar decoding of XEvents and XStats straight from their protobuf wire bytes, with numpy.

Why: a TPU capture holds millions of events, and touching each one as a protobuf message from
Python costs about a microsecond. Here a piece of a line's encoding is split into its events
(``split_line``) and all of them are decoded at once by walking the fields of every message in
lock-step (one numpy pass per field position, not per event).

Contract:
- ``split_line(buf, size)``: the events (their payloads' ranges) and other fields of a piece of an
  XLine's encoding, and where the first field cut by the piece's end starts (see its docstring).
- ``decode_events(buf, starts, ends)`` -> ``RawEvents``: ``metadata_id``, ``offset_ps``, ``duration_ps`` (int64),
  ``aggregated`` (bool: the event carries ``num_occurrences`` instead of an offset), and the
  stats' encodings as (``stat_event``, ``stat_start``, ``stat_len``) into ``buffer``.
- ``leading_stat_ids(buffer, starts, lengths)``: each stat's metadata id from its leading field
  alone (-1 where it does not lead), to choose which stats to decode.
- ``decode_stats(buffer, starts, lengths)`` -> ``RawStats``: per stat ``metadata_id``, ``kind``
  (the XStat field number of its value, 0 when unset) and ``bits`` (the varint or fixed64 value,
  uint64) or, for strings and bytes, (``start``, ``length``) into ``buffer``.
- ``split_line`` and ``decode_events`` run in C (``_wire.c``, one pass: a 1M-event capture's
  events decode several times faster) where setup.py built it, else with numpy; both give the same
  results (a decoded event's stats come in encoding order from C, by field position from numpy:
  callers order them by start), checked against each other on real and mutated captures.
- A buffer ends in ``PAD`` zero bytes past its data (fixed-width reads of the last fields).
- Wire bytes that do not decode (a field running past its message, an over-long varint) raise
  ``ValueError``; so does, where it is met, a tag no serializer writes (field number 0 or past
  2^29-1, wire types 3, 4, 6, 7: "an invalid field tag"), and a piece of a line with more than
  ``MAX_OTHER_FIELDS`` fields besides its events, before they are listed: the fields of any
  bytes cost at most that many records besides the events.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:
    from xlaprof.xspace import _wire as _native  # setup.py builds it where a C compiler is
except ImportError:
    _native = None

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_EVENT_METADATA, _EVENT_OFFSET, _EVENT_DURATION, _EVENT_STATS, _EVENT_OCCURRENCES = 1, 2, 3, 4, 5
_STAT_METADATA = 1
STAT_DOUBLE, STAT_UINT64, STAT_INT64, STAT_STR, STAT_BYTES, STAT_REF = 2, 3, 4, 5, 6, 7
PAD = 16  # bytes after a buffer's data: reads past the last message stay inside it; overruns are checked
_LINE_EVENTS_TAG = 4 << 3 | 2  # XLine.events, length-delimited
MAX_OTHER_FIELDS = 1024  # a line's fields besides its events (a real one has six: id, name, timestamp, ...)
_MAX_FIELD_NUMBER = 2**29 - 1


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


def _words_at(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The 64-bit words at ``pos``. A corrupt length may point into the padding's last 7 bytes (or
    past it): no data is there, and the overrun checks reject what follows; the clamp only keeps the
    lookup inside the buffer."""
    words = _words(buf)
    return words[np.minimum(pos, words.size - 1)]


_STOP_BITS = np.uint64(0x8080808080808080)
_ONE = np.uint64(1)
# Packing the 7-bit groups of a word: pairs of bytes, then of 14-bit groups, then of 28-bit groups.
_PACK = [(np.uint64(shift), np.uint64(low), np.uint64(high)) for shift, low, high in (
    (1, 0x007F007F007F007F, 0x3F803F803F803F80),
    (2, 0x00003FFF00003FFF, 0x0FFFC0000FFFC000),
    (4, 0x000000000FFFFFFF, 0x00FFFFFFF0000000))]


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints starting at ``pos``: (values as uint64, encoded lengths).

    Varints of up to 8 bytes (all but negative or huge numbers) are decoded from one 64-bit word
    each; longer ones byte by byte."""
    word = _words_at(buf, pos)
    stops = ~word & _STOP_BITS
    lowest = stops & (~stops + _ONE)  # the stop bit of the first byte without a continuation bit
    short = stops != 0
    # lowest is 0x80 << 8k for a (k+1)-byte varint: its float64 exponent is 7 + 8k.
    length = ((lowest.astype(np.float64).view(np.int64) >> 52) - 1022) >> 3
    word &= (lowest << _ONE) - _ONE  # the varint's own bytes (all 8 where it is longer)
    word &= ~_STOP_BITS
    for shift, low, high in _PACK:
        packed = word >> shift
        packed &= high
        word &= low
        word |= packed
    long = np.flatnonzero(~short)
    if long.size:
        word[long], length[long] = _long_varints(buf, pos[long])
    return word, length


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
    word = _words_at(buf, pos)
    return word if width == 8 else word & np.uint64(0xFFFFFFFF)


def _fields(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> _Fields:
    """Walk all messages ``buf[starts[i]:ends[i]]`` together, one field position per pass."""
    parts: list[tuple] = []
    if ends.size and int(ends.max()) > buf.size:  # a corrupt length upstream: a message past the buffer's end
        raise ValueError("a message runs past the end of its buffer")
    pos = starts.astype(np.int64)
    live = np.flatnonzero(pos < ends)
    while live.size:
        tag, tag_len = _tags(buf, pos[live])
        wire = (tag & np.uint64(7)).astype(np.int64)
        number = tag >> np.uint64(3)
        if np.any((number == 0) | (number > _MAX_FIELD_NUMBER)):
            raise ValueError("an invalid field tag")
        at = pos[live] + tag_len
        varint = (wire == _VARINT) | (wire == _LENGTH)
        if varint.all():  # the common pass: one field number at this position, a varint or a length
            bits, step = _varints(buf, at)
        else:
            bits = np.zeros(live.size, np.uint64)
            step = np.zeros(live.size, np.int64)
            pick = np.flatnonzero(varint)
            bits[pick], step[pick] = _varints(buf, at[pick])
            for kind, width in ((_FIXED64, 8), (_FIXED32, 4)):
                pick = np.flatnonzero(wire == kind)
                bits[pick], step[pick] = _fixed(buf, at[pick], width), width
            if np.any(~varint & (wire != _FIXED64) & (wire != _FIXED32)):
                raise ValueError("an invalid field tag")
        payload = at + step
        # A length-delimited field's value is its length; its payload follows.
        skip = np.where(wire == _LENGTH, bits.astype(np.int64), 0)
        pos[live] = payload + skip
        if np.any((pos[live] > ends[live]) | (skip < 0)):
            raise ValueError("a field runs past the end of its message")
        parts.append((live, number.astype(np.int64), bits, payload))
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


def decode_events(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> RawEvents:
    """The events encoded at ``buf[starts[i]:ends[i]]`` (``buf`` padded by ``PAD`` bytes)."""
    if _native is None:
        return _decode_events(buf, starts, ends)
    columns = _native.decode_events(buf, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64))
    metadata_id, offset, duration, aggregated, stat_event, stat_start, stat_len = (
        np.frombuffer(c, np.bool_ if k == 3 else np.int64) for k, c in enumerate(columns))
    return RawEvents(buf, metadata_id, offset, duration, aggregated, stat_event, stat_start, stat_len)


def _decode_events(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> RawEvents:
    count = starts.size
    fields = _fields(buf, starts, ends)
    stats = fields.number == _EVENT_STATS
    aggregated = np.zeros(count, bool)
    aggregated[fields.owner[fields.number == _EVENT_OCCURRENCES]] = True
    return RawEvents(buf, _last(fields, _EVENT_METADATA, count), _last(fields, _EVENT_OFFSET, count),
                     _last(fields, _EVENT_DURATION, count), aggregated,
                     fields.owner[stats], fields.start[stats], fields.bits[stats].astype(np.int64))


def split_line(buf: np.ndarray, size: int) -> tuple[int, np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Split ``buf[:size]``, a piece of an XLine's encoding that starts at a field, into its
    complete fields: ``(consumed, event starts, event ends, other fields)``. Events (field 4) come
    as their payloads' ranges, in order; the other fields (a line's id, name, timestamp, ...) as
    the ``(start, end)`` of their whole encoding. ``consumed`` is where the first incomplete field
    starts (``size`` when none is cut): the caller reads on from there.

    Events are found without a Python step per event: every byte ``0x22`` (an event's tag) is a
    candidate whose following field is computed at once; a run of events is then the candidates
    reachable from its first one (``_run``)."""
    if _native is not None:
        consumed, starts, ends, others = _native.split_line(buf, size)
        return consumed, np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64), others
    candidates = np.flatnonzero(buf[:size] == _LINE_EVENTS_TAG)
    stops = ~_words(buf)[candidates + 1] & _STOP_BITS
    ok = stops != 0  # payload bytes that look like a tag may carry no varint at all
    length, width = _varints(buf, np.where(ok, candidates + 1, size))  # size: a zero byte of the padding
    payload = candidates + 1 + width
    following = np.where(ok, payload + length.astype(np.int64), np.iinfo(np.int64).max)
    after = np.minimum(np.searchsorted(candidates, following), max(candidates.size - 1, 0))
    jump = np.where((candidates[after] == following) & (following <= size), after, -1) if candidates.size else after
    runs: list[np.ndarray] = []
    others: list[tuple[int, int]] = []
    pos = 0
    while pos < size:
        if buf[pos] == _LINE_EVENTS_TAG:
            first = int(np.searchsorted(candidates, pos))
            if not ok[first]:
                raise ValueError("an over-long varint")
            run = _run(first, jump)
            last = int(run[-1])
            if following[last] > size:  # cut: read on from it
                runs.append(run[:-1])
                pos = int(candidates[last])
                break
            runs.append(run)
            pos = int(following[last])
            continue
        end = _field_end(buf, pos, size)
        if end > size:
            break
        if len(others) == MAX_OTHER_FIELDS:
            raise ValueError(f"a line with more than {MAX_OTHER_FIELDS} fields besides its events")
        others.append((pos, end))
        pos = end
    chain = np.concatenate(runs) if runs else np.zeros(0, np.int64)
    return min(pos, size), payload[chain], following[chain], others


def _run(first: int, jump: np.ndarray) -> np.ndarray:
    """The candidates reachable from ``first`` through ``jump`` (-1: the run ends there), in order.

    Jumps only go forward, so the reachable set is the fixed point of "``first`` and the targets of
    the set", approached from all candidates: each pass drops those no member jumps to, which
    leaves, after as many passes as the longest chain of tag-like payload bytes (two or three), the
    run itself. Payloads made of such bytes, or a long run of events after another field in the
    same piece (serializers write a line's events together), would need many passes: past 32, one
    Python step per event, with the same result."""
    member = np.zeros(jump.size, bool)
    member[first:] = True
    for _ in range(32):
        targets = jump[member]
        reached = np.zeros(jump.size, bool)
        reached[first] = True
        reached[targets[targets >= 0]] = True
        if np.array_equal(reached, member):
            return np.flatnonzero(member)
        member = reached
    steps, k, hops = [], first, jump.tolist()
    while k >= 0:
        steps.append(k)
        k = hops[k]
    return np.array(steps, np.int64)


def _field_end(buf: np.ndarray, pos: int, size: int) -> int:
    """Where the field at ``buf[pos]`` ends (past ``size`` when it is cut there)."""
    tag, tag_len = (int(v[0]) for v in _varints(buf, np.array([pos])))
    wire, at = tag & 7, pos + tag_len
    if at > size:  # the tag itself is cut
        return at
    if not 0 < tag >> 3 <= _MAX_FIELD_NUMBER:
        raise ValueError("an invalid field tag")
    if wire == _VARINT:
        return at + int(_varints(buf, np.array([at]))[1][0])
    if wire in (_FIXED64, _FIXED32):
        return at + (8 if wire == _FIXED64 else 4)
    if wire == _LENGTH:
        length, width = (int(v[0]) for v in _varints(buf, np.array([at])))
        return at + width + length
    raise ValueError("an invalid field tag")


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
