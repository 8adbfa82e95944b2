"""Readers of exported traces that share nothing with the exporter: a Perfetto trace parsed with
Perfetto's own ``perfetto_trace_pb2`` (begin/end events paired per track as trace_processor
pairs them: an end closes the track's innermost open slice), and a Chrome trace with ``json``.

Both return ``ReadTrace``: per track, named ``"<process> / <track>"``, its slices as
``(name, start_ns, dur_ns, args)`` and its instants as ``(name, ts_ns, args)``.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

FINDINGS = "findings"  # the track of xlaprof's findings, as instants


@dataclass
class ReadTrace:
    slices: dict[str, list[tuple]] = field(default_factory=lambda: defaultdict(list))
    instants: dict[str, list[tuple]] = field(default_factory=lambda: defaultdict(list))
    unclosed: int = 0  # begins never ended
    unmatched_ends: int = 0  # ends with nothing open


def _annotation(note):
    kind = note.WhichOneof("value")
    return getattr(note, kind) if kind else None


def read_perfetto(path: str) -> ReadTrace:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    names, parents, interned = {}, {}, defaultdict(dict)
    events = []
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            names[d.uuid] = d.name
            if d.HasField("parent_uuid"):
                parents[d.uuid] = d.parent_uuid
        for entry in packet.interned_data.event_names:
            interned[packet.trusted_packet_sequence_id][entry.iid] = entry.name
        if packet.HasField("track_event"):
            events.append(packet)
    out = ReadTrace()
    open_slices = defaultdict(list)
    events.sort(key=lambda p: p.timestamp)  # stable: packets of one time keep their order, as in trace_processor
    for packet in events:
        e = packet.track_event
        track = f"{names[parents[e.track_uuid]]} / {names[e.track_uuid]}"
        name = e.name if e.HasField("name") else interned[packet.trusted_packet_sequence_id].get(e.name_iid)
        args = {a.name: _annotation(a) for a in e.debug_annotations}
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            open_slices[track].append((name, packet.timestamp, args))
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            if not open_slices[track]:
                out.unmatched_ends += 1
                continue
            name, start, args = open_slices[track].pop()
            out.slices[track].append((name, start, packet.timestamp - start, args))
        elif e.type == pb.TrackEvent.TYPE_INSTANT and names[e.track_uuid] == FINDINGS:
            out.instants[track].append((name, packet.timestamp, args))
        elif e.type == pb.TrackEvent.TYPE_INSTANT:  # a slice of zero length
            out.slices[track].append((name, packet.timestamp, 0, args))
    out.unclosed = sum(len(v) for v in open_slices.values())
    return out


def read_chrome(path: str) -> ReadTrace:
    with open(path, "rb") as f:
        events = json.load(f)["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    out = ReadTrace()
    for e in events:
        if e["ph"] in ("X", "i"):
            track = f"{processes[e['pid']]} / {threads[(e['pid'], e['tid'])]}"
            ts = round(e["ts"] * 1000)
            if e["ph"] == "X":
                out.slices[track].append((e["name"], ts, round(e["dur"] * 1000), e.get("args", {})))
            else:
                out.instants[track].append((e["name"], ts, e.get("args", {})))
    return out
