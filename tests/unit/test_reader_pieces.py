"""Captures decoded from the file a piece at a time: the same events as protobuf's own parse of
the whole file, whatever the piece size, and a capture of hundreds of MB read in bounded memory."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading

import pytest

from tests.support.reader_columns import columns
from tests.support.synthetic import training_capture, varint, write_wide_capture
from tests.support.workers import REPO
from xlaprof.xspace import reader, schema
from xlaprof.xspace.reader import TASK_ENVIRONMENT_PLANE, read_xspace, read_xspace_file


def _protobuf_events(data: bytes) -> list:
    """Per plane (but the Task Environment), (line, name, line timestamp, offset_ps, dur_us) of each timed event, from
    protobuf's parse of the whole file, one message at a time: the truth, built without the reader."""
    planes = []
    for plane in schema.XSpace.FromString(data).planes:
        if plane.name == TASK_ENVIRONMENT_PLANE:
            continue
        rows = []
        for index, line in enumerate(plane.lines):
            for event in line.events:
                if event.WhichOneof("data") == "num_occurrences":
                    continue
                meta = plane.event_metadata[event.metadata_id]
                rows.append((index, meta.name or meta.display_name, line.timestamp_ns, event.offset_ps, event.duration_ps * 1e-6))
        planes.append((plane.name, rows))
    return planes


@pytest.mark.parametrize("chunk_bytes", [64, 1000, 65_536])
def test_pieces_of_any_size_give_the_events_of_the_whole_file(chunk_bytes):
    data = training_capture(steps=30, devices=2, recompile_every=7, seed=3)
    whole = read_xspace(data)  # one piece per line: the file's lines read whole
    pieces = read_xspace_file(io.BytesIO(data), len(data), source="x", chunk_bytes=chunk_bytes)
    assert columns(pieces) == columns(whole)
    truth = _protobuf_events(data)
    assert [p.name for p in pieces.planes] == [name for name, _ in truth]
    for plane, (_, rows) in zip(pieces.planes, truth):
        assert len(plane) == len(rows) > 0
        assert [plane.names[i] for i in plane.events.name] == [r[1] for r in rows]
        assert plane.events.line.tolist() == [r[0] for r in rows]
        assert plane.events.dur_us.tolist() == [r[4] for r in rows]
        # Line stamps relative to the profile start (as the profiler writes them): each event's start,
        # less its line's stamp, is its offset in the file.
        assert [round((start - r[2] * 1e-3) * 1e6) for start, r in zip(plane.events.start_us.tolist(), rows)] \
            == [r[3] for r in rows]


def test_a_local_files_planes_read_on_threads_are_those_read_one_after_the_other(tmp_path, monkeypatch):
    data = training_capture(steps=30, devices=4, recompile_every=7, seed=5)
    path = tmp_path / "w.xplane.pb"
    path.write_bytes(data)
    threads = set()
    read_plane = reader._read_plane
    monkeypatch.setattr(reader, "_read_plane", lambda *a: threads.add(threading.get_ident()) or read_plane(*a))
    with open(path, "rb") as handle:
        threaded = read_xspace_file(handle, len(data), source=str(path), chunk_bytes=1000)
    assert 1 <= len(threads) <= reader.READ_THREADS and threading.get_ident() not in threads  # reading threads
    serial = read_xspace_file(io.BytesIO(data), len(data), source="x", chunk_bytes=1000)
    assert len(serial.planes) == 5 and columns(threaded) == columns(serial)


_READ_AND_MEASURE = """
import json, resource, sys
from xlaprof.session import Session
session = Session.open(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
session.read()
plane = session.workers[0].space.plane("/device:TPU:0")
print(json.dumps({"events": len(plane), "last_start_us": float(plane.events.start_us[-1]), "before": before,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def test_a_capture_of_hundreds_of_mb_is_read_in_bounded_memory(tmp_path):
    events = 2_000_000
    path = str(tmp_path / "big_9012.xplane.pb")
    size = write_wide_capture(path, events)
    assert size > 200 * 10**6
    done = subprocess.run([sys.executable, "-c", _READ_AND_MEASURE, path], capture_output=True, text=True,
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["events"] == events
    assert found["last_start_us"] == pytest.approx(1e-6 * 1000 * (10_000 - 1))  # from the line's stamp
    kept = events * (4 + 4 + 8 + 8)  # the four event columns (the file: about 120 bytes an event)
    grown = found["peak"] - found["before"]
    # Read whole, the file alone would add its size; in pieces: the columns and a fixed budget.
    assert grown < kept + 64 * 2**20, (grown / 2**20, kept / 2**20, size / 2**20)
    assert grown < size / 2


def test_a_line_whose_other_fields_come_between_its_events():
    """Fields in any order, as protobuf allows: a line's name between two runs of events (the second
    longer than the passes that find a run at once) and its stamp last."""
    def event(i: int) -> bytes:
        encoded = schema.XEvent(metadata_id=1, offset_ps=1000 * i, duration_ps=10 + i).SerializeToString()
        return varint(4 << 3 | 2) + varint(len(encoded)) + encoded

    name = b"XLA Ops"
    line = (schema.XLine(id=3).SerializeToString() + b"".join(event(i) for i in range(5))
            + varint(2 << 3 | 2) + varint(len(name)) + name + b"".join(event(i) for i in range(5, 105))
            + schema.XLine(timestamp_ns=2000).SerializeToString())
    metadata = schema.XPlane(name="/device:TPU:0")
    metadata.event_metadata[1].name = "fusion.1"
    plane = varint(3 << 3 | 2) + varint(len(line)) + line + metadata.SerializeToString()
    data = varint(1 << 3 | 2) + varint(len(plane)) + plane
    for chunk_bytes in (64, 4096):
        tpu = read_xspace_file(io.BytesIO(data), len(data), source="x", chunk_bytes=chunk_bytes).plane("/device:TPU:0")
        assert [(line.id, line.name) for line in tpu.lines] == [(3, "XLA Ops")]
        assert tpu.events.dur_us.tolist() == [(10 + i) * 1e-6 for i in range(105)]
        assert tpu.events.start_us.tolist() == [1000 * i * 1e-6 for i in range(105)]  # the line stamp: the origin
