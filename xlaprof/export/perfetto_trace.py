"""A ``TraceModel`` as a Perfetto trace (``.pftrace``: a protobuf ``Trace`` of ``TracePacket``s).

Contract: ``write_perfetto(model, out)`` writes the model to the binary stream ``out`` with the
``perfetto`` package's trace builder and protos (``perfetto_trace_pb2``): a ``TrackDescriptor``
per track (processes with their pid, their tracks as named children), then each track's slices
as ``TYPE_SLICE_BEGIN``/``TYPE_SLICE_END`` track events (ones of zero length in nanoseconds as
``TYPE_INSTANT``)
on a packet sequence of their own, names interned per sequence, args as debug annotations, and
the model's instants. Timestamps are nanoseconds (microseconds x 1000, rounded), shifted only
if some time is negative. Slices without args (nearly all of a capture) are encoded column-wise
(``proto_wire``, field numbers read from the protos' descriptors) in chunks, so a million
events take seconds and memory bounded by the chunk; slices with args go through the protos'
message classes one packet each. Raises ``MissingExtraError`` without the ``perfetto`` package.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import IO

import numpy as np

from xlaprof.errors import MissingExtraError
from xlaprof.export import proto_wire as wire
from xlaprof.export.slice_order import begin_end_order, instants
from xlaprof.export.trace_model import SliceBlock, TraceModel

CHUNK = 1 << 16  # begin/end records encoded at once
ANNOTATED_CHUNK = 4096  # packets with args serialized at once


def write_perfetto(model: TraceModel, out: IO[bytes]) -> None:
    perfetto = _perfetto()
    pb = perfetto.pb
    builder = perfetto.StreamingTraceProtoBuilder(out)
    shift = min(0.0, min((float(b.start_us.min()) for b in model.blocks if len(b)), default=0.0),
                min((i.time_us for i in model.instants), default=0.0))
    for track in model.tracks:
        packet = builder.create_packet()
        desc = packet.track_descriptor
        desc.uuid, desc.name = track.uuid, track.name
        if track.parent is not None:
            desc.parent_uuid = track.parent
        else:
            desc.process.pid, desc.process.process_name = track.pid, track.name
        builder.write_packet(packet)
    for sequence, block in enumerate(model.blocks, 1):
        if len(block):
            (_bulk if block.args is None else _annotated)(perfetto, builder, out, block, sequence, shift)
    sequence = len(model.blocks) + 1
    for instant in model.instants:
        packet = _event(builder.create_packet(), sequence, _ns(instant.time_us, shift), instant.track,
                        pb.TrackEvent.TYPE_INSTANT)
        packet.track_event.name = instant.name
        _annotate(packet.track_event, instant.args)
        builder.write_packet(packet)


def _perfetto() -> SimpleNamespace:
    """The perfetto package's protos and trace builders."""
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
        from perfetto.trace_builder import proto_builder
    except ImportError:
        raise MissingExtraError("xlaprof export --format perfetto", "perfetto", "perfetto") from None
    return SimpleNamespace(pb=perfetto_trace_pb2, TraceProtoBuilder=proto_builder.TraceProtoBuilder,
                           StreamingTraceProtoBuilder=proto_builder.StreamingTraceProtoBuilder)


def _ns(us, shift: float):
    return np.rint((np.asarray(us, np.float64) - shift) * 1000.0).astype(np.int64)


def _event(packet, sequence: int, ts, track: int, kind: int):
    packet.timestamp = int(ts)
    packet.trusted_packet_sequence_id = sequence
    packet.track_event.type = kind
    packet.track_event.track_uuid = track
    return packet


def _annotate(event, args: dict) -> None:
    for key, value in args.items():
        if value is None or value == "":
            continue
        note = event.debug_annotations.add()
        note.name = key
        if isinstance(value, bool):
            note.bool_value = value
        elif isinstance(value, int):
            note.int_value = value
        elif isinstance(value, float):
            note.double_value = value
        else:
            note.string_value = str(value)


def _annotated(perfetto, builder, out, block: SliceBlock, sequence: int, shift: float) -> None:
    pb = perfetto.pb
    starts, ends = _ns(block.start_us, shift), _ns(block.start_us + block.dur_us, shift)
    index, is_begin = begin_end_order(starts, ends)
    records = [(int(i), True, pb.TrackEvent.TYPE_INSTANT) for i in instants(starts, ends)]
    records += [(i, b, pb.TrackEvent.TYPE_SLICE_BEGIN if b else pb.TrackEvent.TYPE_SLICE_END)
                for i, b in zip(index.tolist(), is_begin.tolist())]
    for lo in range(0, len(records), ANNOTATED_CHUNK):  # a Trace of many packets serialized at once
        batch = perfetto.TraceProtoBuilder()
        for i, begins, kind in records[lo:lo + ANNOTATED_CHUNK]:
            packet = _event(batch.add_packet(), sequence, starts[i] if begins else ends[i], block.track, kind)
            if begins:
                packet.track_event.name = block.names[int(block.name[i])]
                _annotate(packet.track_event, block.args[i])
        out.write(batch.serialize())


def _bulk(perfetto, builder, out, block: SliceBlock, sequence: int, shift: float) -> None:
    pb = perfetto.pb
    used = np.unique(block.name)
    first = builder.create_packet()  # the sequence's interned names: iid = position in ``used`` + 1
    first.trusted_packet_sequence_id = sequence
    first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    for iid, name in enumerate(used.tolist(), 1):
        entry = first.interned_data.event_names.add()
        entry.iid, entry.name = iid, block.names[name]
    builder.write_packet(first)
    iids = np.searchsorted(used, block.name) + 1
    starts, ends = _ns(block.start_us, shift), _ns(block.start_us + block.dur_us, shift)
    index, is_begin = begin_end_order(starts, ends)
    zero = instants(starts, ends)
    index = np.concatenate([zero, index])
    is_begin = np.concatenate([np.ones(zero.size, bool), is_begin])
    kind = np.where(is_begin, pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END)
    kind[:zero.size] = pb.TrackEvent.TYPE_INSTANT
    fields = _fields(pb)
    for lo in range(0, index.size, CHUNK):
        i, begins = index[lo:lo + CHUNK], is_begin[lo:lo + CHUNK]
        n = i.size
        event = wire.concat(wire.varint_field(fields["type"], kind[lo:lo + CHUNK], n),
                            wire.varint_field(fields["name_iid"], iids[i], n, present=begins),
                            wire.varint_field(fields["track_uuid"], block.track, n))
        packet = wire.concat(wire.varint_field(fields["timestamp"], np.where(begins, starts[i], ends[i]), n),
                             wire.varint_field(fields["trusted_packet_sequence_id"], sequence, n),
                             wire.message_field(fields["track_event"], event),
                             wire.varint_field(fields["sequence_flags"],
                                               pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE, n))
        out.write(wire.message_field(fields["packet"], packet).tobytes())


def _fields(pb) -> dict[str, int]:
    """Field numbers from the protos' descriptors."""
    packet, event = pb.TracePacket.DESCRIPTOR.fields_by_name, pb.TrackEvent.DESCRIPTOR.fields_by_name
    return {"packet": pb.Trace.DESCRIPTOR.fields_by_name["packet"].number,
            **{k: packet[k].number for k in ("timestamp", "trusted_packet_sequence_id", "track_event",
                                              "sequence_flags")},
            **{k: event[k].number for k in ("type", "name_iid", "track_uuid")}}
