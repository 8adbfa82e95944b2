"""Protobuf wire encoding of many small messages at once, column-wise with numpy.

Contract: a ``Rows`` is the encoding of n messages of one shape, as an (n, width) byte matrix and
a mask of the bytes that belong to each row (left to right). ``varint_field(number, values,
present)`` encodes one varint field per row (skipped where ``present`` is False),
``message_field(number, rows)`` one length-delimited sub-message per row, ``concat(*parts)``
puts fields side by side, and ``rows.tobytes()`` is the n messages one after another: exactly
the bytes protobuf's own serializer writes for the same fields in the same order. Only varint
and nested-message fields are supported: what a slice's begin or end packet needs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_MAX_VARINT = 10
_VARINT, _LEN = 0, 2


@dataclass(frozen=True)
class Rows:
    data: np.ndarray  # uint8 (n, width)
    mask: np.ndarray  # bool (n, width): the row's bytes, in order

    @property
    def lengths(self) -> np.ndarray:
        return self.mask.sum(axis=1)

    def tobytes(self) -> bytes:
        return self.data[self.mask].tobytes()


def varint_field(number: int, values: np.ndarray | int, rows: int, present: np.ndarray | None = None) -> Rows:
    """``values``: one per row, or one for all rows (encoded once)."""
    values = np.asarray(values, np.uint64)
    value = _varint(values) if values.ndim else _repeat(_varint(values.reshape(1)), rows)
    field = concat(_repeat(_varint(np.array([number << 3 | _VARINT], np.uint64)), rows), value)
    return field if present is None else Rows(field.data, field.mask & present[:, None])


def message_field(number: int, message: Rows) -> Rows:
    rows = message.data.shape[0]
    tag = _repeat(_varint(np.array([number << 3 | _LEN], np.uint64)), rows)
    return concat(tag, _varint(message.lengths), message)


def concat(*parts: Rows) -> Rows:
    return Rows(np.hstack([p.data for p in parts]), np.hstack([p.mask for p in parts]))


def _repeat(one: Rows, rows: int) -> Rows:
    return Rows(np.broadcast_to(one.data, (rows, one.data.shape[1])),
                np.broadcast_to(one.mask, (rows, one.mask.shape[1])))


def _varint(values: np.ndarray) -> Rows:
    v = np.ascontiguousarray(values, np.uint64)
    width = max(1, min(_MAX_VARINT, (int(v.max()).bit_length() + 6) // 7 if v.size else 1))
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    groups = (v[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    length = np.maximum(1, np.sum((v[:, None] >> shifts[None, :]) > 0, axis=1))
    mask = np.arange(width)[None, :] < length[:, None]
    more = np.arange(width)[None, :] < (length - 1)[:, None]
    data = (groups | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
    return Rows(data, mask)
