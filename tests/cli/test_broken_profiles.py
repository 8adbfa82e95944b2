"""Broken profiles: ``analyze`` answers each with exit 2 and one line naming the file and the
fault, never a traceback or a hang; the reader and the analysis are fuzzed with random and mutated
real captures, where the only outcome other than success is ``BadProfileError``."""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.synthetic import varint
from tests.support.workers import run_cli
from xlaprof.analysis import analyze
from xlaprof.errors import BadProfileError
from xlaprof.report import analysis_json
from xlaprof.session import Session, Worker
from xlaprof.xspace import schema as xspace_schema
from xlaprof.xspace.reader import read_xspace


def _host_only_space(with_events: bool) -> bytes:
    space = xspace_schema.XSpace()
    plane = space.planes.add(name="/host:CPU")
    plane.event_metadata[1].name = "SomethingElse"
    if with_events:
        line = plane.lines.add(id=1, name="python", timestamp_ns=1000)
        for i in range(5):
            line.events.add(metadata_id=1, offset_ps=i * 1_000_000, duration_ps=500_000)
    return space.SerializeToString()


def _nested(depth: int) -> bytes:
    blob = b""
    for _ in range(depth):  # field 1 (planes), length-delimited, inside itself
        blob = b"\x0a" + varint(len(blob)) + blob
    return blob


BROKEN = {
    "empty": (b"", "empty"),
    "random": (random.Random(7).randbytes(4096), "not a readable XSpace"),
    # protobuf keeps a field of the wrong wire type as unknown bytes: a file with no planes
    "nested": (_nested(5000), "no profile planes"),
    "oversized": (b"\x0a" + varint(2**31) + b"\x00" * 64, "not a readable XSpace"),
    "no_device": (_host_only_space(True), "no device activity"),
    "no_events": (_host_only_space(False), "no device activity"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_analyze_rejects_broken_profiles_with_one_line(kind, tmp_path):
    data, message = BROKEN[kind]
    path = tmp_path / f"{kind}.xplane.pb"
    path.write_bytes(data)
    result = run_cli("analyze", str(path), timeout=60)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and message in lines[0], lines
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert path.read_bytes() == data  # the input is never modified


@pytest.mark.torch_xla
def test_a_truncated_real_capture_is_rejected(real_capture_path, tmp_path):
    with open(real_capture_path, "rb") as handle:
        data = handle.read()
    path = tmp_path / "truncated.xplane.pb"
    path.write_bytes(data[: len(data) * 2 // 3])
    result = run_cli("analyze", str(path), timeout=60)
    assert result.returncode == 2 and "not a readable XSpace" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _read_and_analyze(data: bytes) -> None:
    """Success, or the one documented error: anything else fails the test."""
    try:
        space = read_xspace(data, source="fuzz")
    except BadProfileError:
        return
    worker = Worker("fuzz", "fuzz", None, "fuzz.xplane.pb", {}, space)
    try:
        analysis_json(analyze(Session("fuzz", "fuzz", {}, [worker])))
    except BadProfileError:
        return


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_fuzz_random_bytes(data):
    _read_and_analyze(data)


@pytest.mark.torch_xla
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_mutated_real_captures(real_capture_path, data):
    with open(real_capture_path, "rb") as handle:
        original = bytearray(handle.read())
    mutation = data.draw(st.sampled_from(["flip", "truncate", "splice", "zero"]))
    at = data.draw(st.integers(0, len(original) - 1))
    if mutation == "flip":
        for offset in data.draw(st.lists(st.integers(0, 64), min_size=1, max_size=8)):
            original[min(at + offset, len(original) - 1)] ^= data.draw(st.integers(1, 255))
    elif mutation == "truncate":
        del original[at:]
    elif mutation == "splice":
        original[at:at] = data.draw(st.binary(min_size=1, max_size=64))
    else:
        original[at:at + 32] = bytes(len(original[at:at + 32]))
    _read_and_analyze(bytes(original))


def test_no_profile_and_unreadable_manifest_are_reported(tmp_path):
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    (run / "localhost_1.xplane.pb").write_bytes(_host_only_space(True))
    (run / "xlaprof.json").write_text("{not json")
    result = run_cli("analyze", str(tmp_path), timeout=60)
    assert result.returncode == 2 and "manifest is not valid JSON" in result.stderr
    os.remove(run / "xlaprof.json")
    (run / "localhost_1.xplane.pb").unlink()
    result = run_cli("analyze", str(run), timeout=60)
    assert result.returncode == 2 and "no profile sessions here" in result.stderr
