"""``xlaprof export`` on synthetic captures: each format read back by a reader that shares nothing
with the exporter (Perfetto's own ``perfetto_trace_pb2``; ``json``) holds every event of the
session, the idle gaps by cause with their line, stack and finding, and the findings; the
column-wise protobuf encoding is byte for byte what protobuf writes."""
from __future__ import annotations

import os

import numpy as np
import pytest

from tests.support.export_checks import assert_export_matches
from tests.support.synthetic import sampled_stacks, training_capture, write_session
from tests.support.trace_readers import read_chrome, read_perfetto
from xlaprof.analysis import analyze
from xlaprof.errors import XlaprofError
from xlaprof.export import export_trace, proto_wire
from xlaprof.session import Session

READERS = {"perfetto": read_perfetto, "chrome": read_chrome}


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("pod"))
    run = write_session(logdir, "pod", {
        "w0_9012": training_capture(steps=12, devices=2, read_every=1, recompile_every=4, sampled=True),
        "w1_9012": training_capture(steps=12, devices=2, read_every=3, seed=1)})
    return analyze(Session.load(run))


@pytest.mark.parametrize("fmt", ["perfetto", "chrome"])
def test_the_export_holds_the_session_and_its_analysis(pod, tmp_path, fmt):
    path = str(tmp_path / f"trace.{fmt}")
    model = export_trace(pod, path, fmt)
    trace = READERS[fmt](path)
    assert_export_matches(trace, pod, tolerance_ns=1)
    assert sum(len(s) for s in trace.slices.values()) == model.slice_count
    assert model.slice_count == pod.session.event_count + sum(
        len(w.pieces) + sum(d.busy_starts.size for d in w.devices) for w in pod.workers)
    # The sampled Python stacks: a slice per run of identical stacks, each carrying its stack.
    stacks = set(sampled_stacks().values())
    py = trace.slices["w0:9012 /host:CPU / py MainThread"]
    assert py and all(s[3]["stack"] in stacks for s in py)
    assert not any(track.startswith("w1:9012") and "py " in track for track in trace.slices)
    # Findings: the recompiling step, with its rank, lost time and span.
    recompile = [i[2] for items in trace.instants.values() for i in items if i[2]["kind"] == "recompilation"]
    assert recompile and all(f["span"] == "train_step" and f["lost_us"] > 0 for f in recompile)
    assert os.stat(path).st_mode & 0o777 == 0o644 and os.listdir(tmp_path) == [f"trace.{fmt}"]


def test_python_stack_runs_recorded_late_are_exported_and_analysed_at_their_samples(tmp_path):
    """The main thread's emitter records a run's event up to ``DRAIN_S`` after its sample (``py_lag_us``):
    the export places its slice, and the analysis its run, where the run was sampled."""
    analyses, slices = [], []
    for lag_us in (0.0, 30_000.0):
        run = write_session(str(tmp_path / f"lag{lag_us:.0f}"), "s", {
            "w0_9012": training_capture(steps=6, devices=1, sampled=True, stack_lag_us=lag_us)})
        analysis = analyze(Session.load(run))
        export_trace(analysis, path := str(tmp_path / f"lag{lag_us:.0f}.json"), "chrome")
        analyses.append(analysis)
        slices.append(sorted((s[1], s[2], s[3]["stack"]) for s in read_chrome(path).slices["w0:9012 /host:CPU / py MainThread"]))
    # each slice from its sample; its end where the next run began, else (a gap the synthetic runs
    # leave, which a sampled thread never has) where its event closed, up to the lag later
    (on_time, late) = slices
    assert on_time and [(s[0], s[2]) for s in late] == [(s[0], s[2]) for s in on_time]
    assert all(0 <= b[1] - a[1] <= 30_000_000 for a, b in zip(on_time, late))
    assert sum(b[1] == a[1] for a, b in zip(on_time, late)) >= len(on_time) / 2
    on_time, late = (a.findings for a in analyses)  # the same findings, their times but for those gaps
    assert [(f.kind, f.source) for f in late] == [(f.kind, f.source) for f in on_time]
    assert all(abs(a.lost_us - b.lost_us) <= 0.02 * a.lost_us + 1 for a, b in zip(on_time, late))


def test_a_gap_names_its_cause_line_stack_and_finding(pod, tmp_path):
    path = str(tmp_path / "trace.pftrace")
    export_trace(pod, path, "perfetto")
    trace = read_perfetto(path)
    reads = [s for s in trace.slices["xlaprof w0:9012 / TPU:0 idle by cause"] if s[0] == "transfer_from_device"]
    assert reads
    args = reads[0][3]
    finding = pod.findings[args["finding"] - 1]
    assert finding.kind.value == "transfer_from_device" and finding.source == args["source"] == "train.py:57"
    assert args["span"] == "log_loss" and args["stack"].endswith(args["source"] + " log_loss")


@pytest.mark.parametrize("fmt,where,message", [
    ("svg", "trace.svg", "unknown export format 'svg': give one of perfetto, chrome"),
    ("chrome", "missing/trace.json", "its directory does not exist"),
])
def test_a_bad_output_is_one_clear_error(pod, tmp_path, fmt, where, message):
    with pytest.raises(XlaprofError, match=message):
        export_trace(pod, str(tmp_path / where), fmt)
    assert not os.path.exists(tmp_path / where)


def test_a_failed_export_leaves_the_existing_file(pod, tmp_path, monkeypatch):
    path = tmp_path / "trace.json"
    path.write_text("kept")

    def broken(model, out):
        out.write(b"half")
        raise OSError("disk full")

    monkeypatch.setitem(__import__("xlaprof.export").export.FORMATS, "chrome", broken)
    with pytest.raises(XlaprofError, match=f"^{path}: disk full [(]nothing written[)]$"):
        export_trace(pod, str(path), "chrome")
    assert path.read_text() == "kept" and os.listdir(tmp_path) == ["trace.json"]


def test_column_wise_packets_are_what_protobuf_writes():
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    rng = np.random.default_rng(0)
    n = 300
    ts = rng.integers(0, 2**62, n).astype(np.uint64)
    ts[:3] = (0, 127, 128)  # the varint edges
    iid = rng.integers(1, 70_000, n)
    begins = rng.random(n) < 0.5
    event = proto_wire.concat(proto_wire.varint_field(9, np.where(begins, 1, 2), n),
                              proto_wire.varint_field(10, iid, n, present=begins),
                              proto_wire.varint_field(11, 123456789, n))
    packet = proto_wire.concat(proto_wire.varint_field(8, ts, n), proto_wire.varint_field(10, 7, n),
                               proto_wire.message_field(11, event), proto_wire.varint_field(13, 2, n))
    expected = pb.Trace()
    for i in range(n):
        p = expected.packet.add()
        p.timestamp, p.trusted_packet_sequence_id, p.sequence_flags = int(ts[i]), 7, 2
        p.track_event.type = 1 if begins[i] else 2
        if begins[i]:
            p.track_event.name_iid = int(iid[i])
        p.track_event.track_uuid = 123456789
    assert proto_wire.message_field(1, packet).tobytes() == expected.SerializeToString()


def test_one_finding_per_cause_and_line_across_sampled_and_unsampled_workers(pod):
    """A line named by one worker's stacks and by the other's span (no stacks there) is one finding."""
    keyed = [(f.kind, f.source) for f in pod.findings if f.source and f.kind.cause is not None]
    assert len(keyed) == len(set(keyed)), keyed
