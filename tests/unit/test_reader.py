"""The XSpace reader: round trips through the synthetic builder, timestamps, stats, bad input."""
from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.support.synthetic import XSpaceBuilder, training_capture, training_event_count
from xlaprof.errors import BadProfileError
from xlaprof.session import Session
from xlaprof.xspace import schema
from xlaprof.xspace.reader import read_xspace


def _host_capture(*, absolute_lines: bool, task_environment: bool = True) -> XSpaceBuilder:
    builder = XSpaceBuilder(absolute_lines=absolute_lines)
    if task_environment:
        builder.task_environment(2000.0)
    host = builder.plane("/host:CPU")
    host.add_stat("cores", 8)
    python = host.line("python", line_id=7)
    python.event("train_step", 10.0, 500.0, step_num=3, source="train.py:30", _r=1)
    python.event("forward", 20.5, 100.25, source="train.py:42", scale=0.5, blob=b"\x00\x01")
    worker = host.line("tf_pytorchxla/1", offset_ns=1000)  # a line stamped 1 us after the start
    worker.event("PjRtComputationClient::TransferToDevice", 0.5, 2.0)  # before its line's stamp
    tpu = builder.plane("/device:TPU:0").line("XLA Ops")
    tpu.event("fusion.1", 100.0, 50.0, hlo_op="fusion.1")
    return builder


def test_round_trip_events_lines_and_names():
    space = read_xspace(_host_capture(absolute_lines=False).to_bytes())
    assert [p.name for p in space.planes] == ["/host:CPU", "/device:TPU:0"]  # no Task Environment
    host = space.plane("/host:CPU")
    assert [(line.id, line.name) for line in host.lines] == [(7, "python"), (2, "tf_pytorchxla/1")]
    names = [host.names[i] for i in host.events.name]
    assert names == ["train_step", "forward", "PjRtComputationClient::TransferToDevice"]
    assert host.events.line.tolist() == [0, 0, 1]
    assert host.events.start_us.tolist() == pytest.approx([10.0, 20.5, 0.5])  # incl. a negative offset
    assert host.events.dur_us.tolist() == pytest.approx([500.0, 100.25, 2.0])
    assert host.plane_stats == {"cores": 8}
    assert space.window_us == pytest.approx((0.0, 2000.0))
    assert space.event_count == 4 and space.hostnames == ["synthetic"]


def test_stats_of_every_kind_on_host_planes_only():
    space = read_xspace(_host_capture(absolute_lines=False).to_bytes())
    host = space.plane("/host:CPU")
    assert host.stats.of_event(0) == {"step_num": 3, "source": "train.py:30", "_r": 1}
    # A string stat is a ref to the XStatMetadata named by it; doubles and bytes stay as they are.
    assert host.stats.of_event(1) == {"source": "train.py:42", "scale": 0.5, "blob": b"\x00\x01"}
    assert host.stats.of_event(2) == {}
    assert host.stats.column("source") == {0: "train.py:30", 1: "train.py:42"}
    assert len(space.plane("/device:TPU:0").stats.event) == 0  # device stats are not read


def test_absolute_and_normalized_line_timestamps_agree():
    normalized = read_xspace(_host_capture(absolute_lines=False).to_bytes())
    absolute = read_xspace(_host_capture(absolute_lines=True).to_bytes())
    assert normalized.origin_ns == absolute.origin_ns == XSpaceBuilder().start_ns
    for a, b in zip(normalized.planes, absolute.planes):
        assert np.allclose(a.events.start_us, b.events.start_us)


def test_without_task_environment_the_earliest_line_is_the_origin():
    space = read_xspace(_host_capture(absolute_lines=True, task_environment=False).to_bytes())
    assert space.origin_ns == XSpaceBuilder().start_ns  # the python line's stamp
    assert space.window_us is None
    assert space.plane("/host:CPU").events.start_us.tolist() == pytest.approx([10.0, 20.5, 0.5])


def test_inline_strings_unsigned_and_unknown_metadata():
    builder = _host_capture(absolute_lines=False)
    host = builder.space.planes[1]  # after the Task Environment
    events = host.lines[0].events
    events[0].stats.add(metadata_id=999, str_value="inline")  # a stat id with no metadata
    events[0].stats.add(metadata_id=998, uint64_value=2**63 + 5)
    events[1].stats.add(metadata_id=997, ref_value=12345)  # a ref to nothing
    events[1].metadata_id = 4242  # an event id with no metadata
    plane = read_xspace(builder.to_bytes()).plane("/host:CPU")
    assert plane.stats.of_event(0)["999"] == "inline"
    assert plane.stats.of_event(0)["998"] == 2**63 + 5
    assert plane.stats.of_event(1)["997"] == ""
    assert plane.names[plane.events.name[1]] == "<unknown event>"
    assert plane.names[plane.events.name[0]] == "train_step"


def test_aggregated_events_are_skipped_with_their_stats():
    builder = _host_capture(absolute_lines=False)
    python = builder.space.planes[1].lines[0]
    aggregated = python.events.add(metadata_id=1, num_occurrences=12, duration_ps=5)
    aggregated.stats.add(metadata_id=1, int64_value=1)
    plane = read_xspace(builder.to_bytes()).plane("/host:CPU")
    assert len(plane) == 3
    assert sorted(set(plane.stats.event.tolist())) == [0, 1]


def test_training_capture_reads_back_with_its_exact_event_count():
    args = dict(steps=7, devices=3, ops_per_step=5, read_every=2, recompile_every=3)
    space = read_xspace(training_capture(**args))
    assert space.event_count == training_event_count(**args)
    assert [p.name for p in space.planes] == ["/host:CPU"] + [f"/device:TPU:{d}" for d in range(3)]
    host = space.plane("/host:CPU")
    assert sorted(host.stats.column("graph_hash").values()) == [f"{g:032x}" for g in (1, 2, 3)]
    assert sorted(host.stats.column("step_num").values()) == list(range(7))
    tpu = space.plane("/device:TPU:2")
    assert [line.name for line in tpu.lines] == ["XLA Modules", "XLA Ops", "Steps"]
    assert np.bincount(tpu.events.line).tolist() == [7, 35, 7]


@pytest.mark.parametrize("data, fault", [
    (b"", "empty"),
    (b"\xff\xff\xff\xff", "not a readable XSpace"),
    (b"not a profile at all", "not a readable XSpace"),
])
def test_garbage_raises_bad_profile_error(data, fault):
    with pytest.raises(BadProfileError, match=fault):
        read_xspace(data, source="x.xplane.pb")


def test_truncated_capture_raises_bad_profile_error():
    data = training_capture(steps=3, devices=1, ops_per_step=4)
    with pytest.raises(BadProfileError, match="x.xplane.pb"):
        read_xspace(data[: len(data) // 2], source="x.xplane.pb")


def test_no_planes_raises_bad_profile_error():
    with pytest.raises(BadProfileError, match="no profile planes"):
        read_xspace(XSpaceBuilder().to_bytes())


@pytest.mark.parametrize("event", [b"\x0b\x01", b"\x08", b"\x22\x7f\x08"])  # group tag, cut varint, overrun
def test_corrupt_event_bytes_raise_bad_profile_error(event):
    space = _raw_space_class().FromString(_host_capture(absolute_lines=False).to_bytes())
    space.planes[2].lines[0].events.append(event)  # the device plane, whose events upb never parses
    with pytest.raises(BadProfileError, match="corrupt event"):
        read_xspace(space.SerializeToString())


def _raw_space_class() -> type:
    """An XSpace whose ``XLine.events`` are ``repeated bytes``: raw event encodings, bad ones too."""
    file = descriptor_pb2.FileDescriptorProto()
    schema.XSpace.DESCRIPTOR.file.CopyToProto(file)
    line = next(m for m in file.message_type if m.name == "XLine")
    events = next(f for f in line.field if f.number == 4)
    events.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    events.ClearField("type_name")
    pool = descriptor_pool.DescriptorPool()  # its own pool: the names repeat the real schema's
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.XSpace"))


def test_reading_a_bad_file_names_the_file(tmp_path):
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(b"\x00garbage")
    with pytest.raises(BadProfileError, match="bad.xplane.pb"):
        Session.load(str(path))
