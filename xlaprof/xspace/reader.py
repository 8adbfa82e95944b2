"""Read an ``*.xplane.pb`` (a serialized XSpace) into the columnar model of ``events``.

Contract:
- ``read_xspace_file(handle, size, source=...)`` returns an ``XSpaceData`` for the capture in a
  seekable binary file object (a local file, an fsspec file; the session package opens them, see
  ``Session.read``), decoded a piece at a time, never held whole: ``file_index`` finds the planes
  and lines, each line is read ``CHUNK_BYTES`` at a time. Memory: the columns kept (24 bytes a
  timed event, plus the host planes' stats and each plane's metadata) and a fixed budget of about
  64 MiB (a piece, its decoding's temporaries, a growing block per column) per reading thread: a
  local file's planes are decoded ``READ_THREADS`` (2) at a time, each thread reading its pieces at
  their positions (the decoding runs outside the GIL, in C or in numpy); other
  files' one after the other. ``read_xspace(data)``
  reads the bytes of a whole capture the same way. It needs no torch, torch_xla or xprof.
- Times: every event's ``start_us`` is measured from the worker's origin, ``origin_ns`` (the
  profile start time recorded in the capture, else the earliest line timestamp), so one worker's
  planes share one clock; ``origin_ns`` (ns since the Unix epoch) aligns workers with each other.
  Line timestamps may be absolute or, as the profiler writes them, relative to the profile start.
- Events are decoded column-wise from their wire bytes (``wire``), never one Python object each;
  the columns do not depend on the piece size.
- Stats are read only for host planes (``/host:...``), and there only for the events the analyses
  look at: those carrying a span, step or compile stat (``vocabulary.STAT_KEYS_TO_READ``), with all
  their other stats, and the metrics snapshots. Op events (millions on a TPU's device planes, and on
  the CPU device's host plane) carry stats no analysis needs (``hlo_op``, ``hlo_module``, ...),
  except ``program_id`` (``vocabulary.INT_STAT_COLUMNS``), which is decoded column-wise into an
  ``IntColumn`` without a Python object per event.
- Event *metadata* stats (one set per distinct name, not per event) are kept for every plane in
  ``Plane.metadata_stats``: the compiled HLO modules of ``/host:metadata`` (as bytes, parsed only
  by ``xlaprof.hlo`` when asked), TPU op categories and program ids.
- Aggregated events (``num_occurrences`` instead of an offset) are not timeline events and are
  skipped with their stats (xprof's trace viewer draws them at their line's start).
- A file that is not a readable XSpace raises ``BadProfileError`` naming the file and the fault.
- Hostile bytes: the work and memory stay bounded whatever the file holds. A tag no serializer
  writes (field 0, wire types 3, 4, 6, 7) is refused where it is met (a zero-filled file of any
  size at its first byte, in constant memory); nothing is kept per field but events: the index
  keeps a message's other fields as byte ranges and caps planes, lines, walked fields and metadata
  (``file_index``), a line may have at most ``wire.MAX_OTHER_FIELDS`` fields besides its events.
  The memory of a read is then: per reading thread a piece and its decoding (in proportion to the
  piece's events; about 64 MiB on real captures), the columns (24 bytes a kept event: a 16 MiB
  file of 8M empty 2-byte events peaks at 370 MiB under tracemalloc, 128 MiB of it column blocks
  not yet filled), each plane's metadata as protobuf objects (at most ``file_index.METADATA_BYTES``
  of it a plane; protobuf may take ~30 times that for metadata of tiny repeated messages) and
  about 100 bytes a line.
"""
from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from xlaprof.errors import BadProfileError
from xlaprof.xspace import schema, vocabulary, wire
from xlaprof.xspace.events import EventTable, IntColumn, Line, Plane, StatTable
from xlaprof.xspace.file_index import PlaneIndex, index_space, line_pieces

PROFILE_START_STAT = "profile_start_time"
PROFILE_STOP_STAT = "profile_stop_time"
CHUNK_BYTES = 4 * 2**20  # a line's encoding is read and decoded this much at a time
COLUMN_BLOCK_BYTES = 32 * 2**20  # event columns grow by blocks of this size (see _Column)
TASK_ENVIRONMENT_PLANE = "Task Environment"
READ_THREADS = 2  # planes of a local file decoded at once


class _CorruptEvent(ValueError):
    """Wire bytes of an event (not of the file's structure) that do not decode."""


@dataclass
class XSpaceData:
    source: str  # where it was read from, for messages
    planes: list[Plane]
    hostnames: list[str]
    origin_ns: int  # ns since the Unix epoch; start_us = 0 there
    window_us: tuple[float, float] | None  # the profiled window, where the capture records it
    errors: list[str]
    warnings: list[str]

    def plane(self, name: str) -> Plane | None:
        return next((p for p in self.planes if p.name == name), None)

    @property
    def event_count(self) -> int:
        return sum(len(p) for p in self.planes)


def read_xspace(data: bytes, *, source: str = "<bytes>") -> XSpaceData:
    """The capture in ``data`` (a whole file's bytes)."""
    return read_xspace_file(io.BytesIO(data), len(data), source=source)


def read_xspace_file(handle, size: int, *, source: str, chunk_bytes: int = CHUNK_BYTES) -> XSpaceData:
    """The capture in the seekable binary file ``handle`` of ``size`` bytes, read a line's piece of
    at most about ``chunk_bytes`` at a time."""
    if not size:
        raise BadProfileError(f"{source}: the file is empty, not a profile capture")
    try:
        index = index_space(handle, size)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise BadProfileError(
            f"{source}: not a readable XSpace profile (corrupt or truncated: {exc})") from None
    headers = [p.header for p in index.planes]
    if not headers or not any(h.name for h in headers):
        raise BadProfileError(f"{source}: no profile planes in the file (not an XSpace capture?)")
    start_ns, stop_ns = _profile_times(headers)
    try:
        read = _read_planes(handle, [p for p in index.planes if p.header.name != TASK_ENVIRONMENT_PLANE], chunk_bytes)
    except _CorruptEvent as exc:
        raise BadProfileError(f"{source}: not a readable XSpace profile (corrupt event: {exc})") from None
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise BadProfileError(
            f"{source}: not a readable XSpace profile (corrupt or truncated: {exc})") from None
    stamps = [ts for _, line_ns, counts, _ in read for ts, n in zip(line_ns, counts) if n]
    earliest_ns = min(stamps) if stamps else 0
    origin_ns = start_ns or earliest_ns
    # The profiler normally rewrites line timestamps relative to the profile start; older or
    # hand-made captures keep them absolute (ns since the epoch).
    normalized = start_ns > 0 and earliest_ns < start_ns // 2
    line_base_ns = 0 if normalized else origin_ns
    for plane, line_ns, _, line_rows in read:  # starts measured from their line's stamp, until now
        for ts, lo, hi in zip(line_ns, line_rows, line_rows[1:]):
            plane.events.start_us[lo:hi] += (ts - line_base_ns) * 1e-3
    window = (0.0, (stop_ns - start_ns) * 1e-3) if start_ns and stop_ns > start_ns else None
    rest = index.rest
    return XSpaceData(source, [plane for plane, *_ in read], list(rest.hostnames), origin_ns, window,
                      list(rest.errors), list(rest.warnings))


def _read_planes(handle, planes: list[PlaneIndex], chunk_bytes: int) -> list:
    """``_read_plane`` of each plane, in order: on ``READ_THREADS`` threads when ``handle`` is a local
    file (each thread reads its planes' pieces at their positions), else one after the other."""
    threads = min(READ_THREADS, len(planes), os.cpu_count() or 1)
    if threads < 2 or not isinstance(handle, (io.BufferedReader, io.FileIO)):
        return [_read_plane(handle, p, chunk_bytes) for p in planes]
    fd = handle.fileno()
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda p: _read_plane(_PositionalFile(fd), p, chunk_bytes), planes))


class _PositionalFile:
    """One thread's view of a shared file descriptor, with its own position: ``seek`` and
    ``readinto`` by positional reads."""

    def __init__(self, fd: int) -> None:
        self.fd, self.pos = fd, 0

    def seek(self, pos: int) -> None:
        self.pos = pos

    def readinto(self, view: memoryview) -> int:
        done = 0
        while done < len(view):
            n = os.preadv(self.fd, [view[done:]], self.pos + done)
            if n == 0:
                break
            done += n
        self.pos += done
        return done


def _stat_value(stat, stat_names: dict[int, str]):
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    return getattr(stat, kind)


def _profile_times(headers: list) -> tuple[int, int]:
    """(start, stop) in ns since the epoch from the Task Environment plane; 0 where absent."""
    found = {PROFILE_START_STAT: 0, PROFILE_STOP_STAT: 0}
    for plane in headers:
        if plane.name != TASK_ENVIRONMENT_PLANE:
            continue
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        for stat in plane.stats:
            value = _stat_value(stat, names)
            if names.get(stat.metadata_id) in found and isinstance(value, int) and value > 0:
                found[names[stat.metadata_id]] = value
    return found[PROFILE_START_STAT], found[PROFILE_STOP_STAT]


def _read_plane(handle, index: PlaneIndex, chunk_bytes: int) -> tuple[Plane, list[int], list[int], list[int]]:
    """The plane, its events' ``start_us`` still measured from their line's timestamp; with each
    line's timestamp (ns) and event count (aggregated events included), and where each line's rows
    start (rows are in line order), the last followed by the row count."""
    plane = index.header
    metadata_ids = sorted(plane.event_metadata.keys())
    names = [plane.event_metadata[i].name or plane.event_metadata[i].display_name
             for i in metadata_ids]
    id_lookup = np.asarray(metadata_ids, np.int64)
    want_stats = plane.name.startswith("/host:")
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    stat_keys: dict[str, int] = {}
    wanted_stat_ids = np.array([k for k, name in stat_names.items() if name in vocabulary.STAT_KEYS_TO_READ], np.int64)
    snapshot_ids = np.array([i for i in metadata_ids if plane.event_metadata[i].name == vocabulary.METRICS_EVENT],
                            np.int64)

    int_stat_ids = np.array([k for k, name in stat_names.items() if name in vocabulary.INT_STAT_COLUMNS], np.int64)

    lines: list[Line] = []
    line_ns: list[int] = []
    counts: list[int] = []
    line_rows: list[int] = []
    columns = tuple(_Column(t) for t in (np.int32, np.int32, np.float64, np.float64))  # line, name, offset_us
    # (start_us to be), dur_us
    unknown = False  # events whose metadata is missing
    stat_parts: list[tuple[np.ndarray, np.ndarray, list]] = []  # per piece: (row, key, values)
    int_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per piece: (stat id, row, value)
    base_row = 0
    for line_index, (offset, length) in enumerate(index.lines):
        line_rows.append(base_row)
        header: list[bytes] = []
        count = 0
        for buf, starts, ends, others in line_pieces(handle, offset, length, chunk_bytes):
            header.extend(buf[a:b].tobytes() for a, b in others)
            if len(header) > wire.MAX_OTHER_FIELDS:
                raise ValueError(f"a line with more than {wire.MAX_OTHER_FIELDS} fields besides its events")
            if not starts.size:
                continue
            count += starts.size
            try:
                raw = wire.decode_events(buf, starts, ends)
            except ValueError as exc:
                raise _CorruptEvent(str(exc)) from None
            keep = ~raw.aggregated
            kept = int(keep.sum())
            name_index = np.searchsorted(id_lookup, raw.metadata_id[keep]).astype(np.int32)
            known = name_index < len(id_lookup)
            known[known] = id_lookup[name_index[known]] == raw.metadata_id[keep][known]
            name_index[~known] = len(names)  # a visible placeholder: "<unknown event>"
            unknown |= not known.all()
            for column, part in zip(columns, (np.full(kept, line_index, np.int32), name_index,
                                              raw.offset_ps[keep] * 1e-6, raw.duration_ps[keep] * 1e-6)):
                column.extend(part)
            if want_stats and raw.stat_event.size:
                # Rows of the kept events; stats of aggregated events go with them.
                row_of = np.cumsum(keep) - 1 + base_row
                # In encoding order (numpy's wire walk yields them by field position), with their row.
                with_row = np.argsort(raw.stat_start, kind="stable")
                with_row = with_row[keep[raw.stat_event[with_row]]]
                lead = wire.leading_stat_ids(raw.buffer, raw.stat_start[with_row], raw.stat_len[with_row])
                stat_parts.append(_line_stats(raw, with_row, lead, row_of, stat_names, stat_keys,
                                              wanted_stat_ids, snapshot_ids))
                if int_stat_ids.size:
                    int_parts.append(_int_stats(raw, with_row, lead, row_of, int_stat_ids))
            base_row += kept
        line = schema.XLine.FromString(b"".join(header))
        lines.append(Line(line.id, line.name, line.display_name or line.name))
        line_ns.append(line.timestamp_ns)
        counts.append(count)

    if columns[0].rows:
        if unknown:
            names = names + ["<unknown event>"]
        table = EventTable(*(column.finish() for column in columns))
    else:
        table = EventTable.empty()
    if stat_parts:
        rows, keys, values = zip(*stat_parts)
        stats = StatTable(list(stat_keys), np.concatenate(rows), np.concatenate(keys).astype(np.int32),
                          [v for part in values for v in part])
    else:
        stats = StatTable.empty()
    plane_stats = {stat_names.get(s.metadata_id, str(s.metadata_id)): _stat_value(s, stat_names)
                   for s in plane.stats}
    metadata_stats = {index: {stat_names.get(s.metadata_id, str(s.metadata_id)): _stat_value(s, stat_names)
                              for s in plane.event_metadata[i].stats}
                      for index, i in enumerate(metadata_ids) if len(plane.event_metadata[i].stats)}
    return (Plane(plane.name, lines, names, table, stats, plane_stats, _int_columns(int_parts, stat_names),
                  metadata_stats, id_lookup), line_ns, counts, [*line_rows, base_row])


class _Column:
    """A column growing by pieces, kept in blocks of ``COLUMN_BLOCK_BYTES``: allocations that large
    are mapped and unmapped whole, so the blocks freed while ``finish`` copies them into one array
    go back to the system (small parts would leave the heap at its high-water mark: the columns'
    size twice over)."""

    def __init__(self, dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.block_rows = COLUMN_BLOCK_BYTES // self.dtype.itemsize
        self.blocks: list[np.ndarray] = []
        self.rows = 0

    def extend(self, values: np.ndarray) -> None:
        while values.size:
            at = self.rows % self.block_rows
            if at == 0:
                self.blocks.append(np.empty(self.block_rows, self.dtype))  # pages taken as filled
            take = min(self.block_rows - at, values.size)
            self.blocks[-1][at:at + take] = values[:take]
            self.rows += take
            values = values[take:]

    def finish(self) -> np.ndarray:
        whole = np.empty(self.rows, self.dtype)
        for start in range(0, self.rows, self.block_rows):
            block = self.blocks.pop(0)
            whole[start:start + self.block_rows] = block[:min(self.block_rows, self.rows - start)]
            del block
        return whole


def _int_stats(raw: wire.RawEvents, candidates: np.ndarray, lead: np.ndarray, row_of: np.ndarray,
               int_stat_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The integer stats of ``int_stat_ids`` among the line's stats at ``candidates`` (whose
    metadata ids are ``lead``), as (stat id, event row, value) columns."""
    maybe = candidates[np.isin(lead, int_stat_ids) | (lead < 0)]
    decoded = wire.decode_stats(raw.buffer, raw.stat_start[maybe], raw.stat_len[maybe])
    ok = np.isin(decoded.metadata_id, int_stat_ids) & (
        (decoded.kind == wire.STAT_INT64) | (decoded.kind == wire.STAT_UINT64))
    return decoded.metadata_id[ok], row_of[raw.stat_event[maybe[ok]]], decoded.bits[ok].view(np.int64)


def _int_columns(parts: list[tuple], stat_names: dict[int, str]) -> dict[str, IntColumn]:
    if not parts:
        return {}
    ids, rows, values = (np.concatenate(c) for c in zip(*parts))
    columns = {}
    for stat_id in np.unique(ids).tolist():
        pick = ids == stat_id
        order = np.argsort(rows[pick], kind="stable")
        columns[stat_names[stat_id]] = IntColumn(rows[pick][order].astype(np.int64), values[pick][order])
    return columns


def _line_stats(raw: wire.RawEvents, candidates: np.ndarray, lead: np.ndarray, row_of: np.ndarray,
                stat_names: dict[int, str], stat_keys: dict[str, int], wanted_stat_ids: np.ndarray,
                snapshot_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """Of the line's stats at ``candidates`` (whose metadata ids are ``lead``, -1 where unknown),
    those worth reading (see the module docstring), as (event row, interned key, value)."""
    owners = raw.stat_event[candidates]
    marked = np.zeros(raw.metadata_id.size, bool)
    marked[owners[np.isin(lead, wanted_stat_ids) | (lead < 0)]] = True  # unknown: decode to see
    marked |= np.isin(raw.metadata_id, snapshot_ids)
    maybe = candidates[marked[owners]]
    decoded = wire.decode_stats(raw.buffer, raw.stat_start[maybe], raw.stat_len[maybe])
    owners = raw.stat_event[maybe]
    marked[:] = False
    marked[owners[np.isin(decoded.metadata_id, wanted_stat_ids)]] = True
    marked |= np.isin(raw.metadata_id, snapshot_ids)
    keep = np.flatnonzero(marked[owners])
    metadata_id, kinds = decoded.metadata_id[keep], decoded.kind[keep]
    key_of = {}
    seen, first = np.unique(metadata_id, return_index=True)
    for stat_id in seen[np.argsort(first)].tolist():  # keys interned in order of appearance
        key = stat_names.get(stat_id, str(stat_id))
        key_of[stat_id] = stat_keys.setdefault(key, len(stat_keys))
    keys = np.array([key_of[m] for m in metadata_id.tolist()], np.int64)
    values = [_raw_value(raw.buffer, kind, bits, start, length, stat_names) for kind, bits, start, length in
              zip(kinds.tolist(), decoded.bits[keep].tolist(), decoded.start[keep].tolist(),
                  decoded.length[keep].tolist())]
    return row_of[owners[keep]], keys, values


def _raw_value(buffer: np.ndarray, kind: int, bits: int, start: int, length: int, stat_names: dict[int, str]):
    if kind == wire.STAT_REF:
        return stat_names.get(bits, "")
    if kind == wire.STAT_INT64:
        return bits - (1 << 64) if bits >= 1 << 63 else bits
    if kind == wire.STAT_UINT64:
        return bits
    if kind == wire.STAT_DOUBLE:
        return float(np.uint64(bits).view(np.float64))
    if kind == wire.STAT_STR:
        return buffer[start:start + length].tobytes().decode("utf-8", errors="replace")
    if kind == wire.STAT_BYTES:
        return buffer[start:start + length].tobytes()
    return None
