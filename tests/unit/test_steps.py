"""The per-step table: from a TPU plane's "Steps" line when the host has no step spans, and clipped to
the analysis window."""
from __future__ import annotations

import pytest

from tests.support.synthetic import XSpaceBuilder
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.session import Session, Worker
from xlaprof.xspace.reader import read_xspace


def _session(with_host_step: bool) -> Session:
    builder = XSpaceBuilder()
    builder.task_environment(1000.0)
    tpu = builder.plane("/device:TPU:0")
    modules, steps = tpu.line("XLA Modules"), tpu.line("Steps")
    for n, (start, busy) in enumerate(((100.0, 200.0), (500.0, 100.0))):
        modules.event("SyncTensorsGraph.1", start, busy)
        steps.event(str(41 + n), start - 50.0, 350.0)  # a step: 50 us of idle, then the module
    host = builder.plane("/host:CPU").line("python")
    host.event("StepMarker", 40.0, 20.0)
    if with_host_step:
        host.event("train_step", 0.0, 900.0, step_num=7, source="t.py:1")
    space = read_xspace(builder.to_bytes())
    return Session("s", "s", {}, [Worker("w", "w", 1, "w.xplane.pb", {}, space)])


def test_device_steps_line_gives_the_steps_when_the_host_has_none():
    (steps,) = analysis_json(analyze(_session(with_host_step=False)))["steps"].values()
    assert [s["step"] for s in steps] == [41, 42]
    assert [s["start_us"] for s in steps] == [50.0, 450.0]
    assert [s["busy_us"] for s in steps] == pytest.approx([200.0, 100.0])
    for s in steps:
        assert s["busy_us"] + sum(s["idle_by_cause_us"].values()) == pytest.approx(s["wall_us"])


def test_host_step_spans_win_over_the_device_line():
    (steps,) = analysis_json(analyze(_session(with_host_step=True)))["steps"].values()
    assert [s["step"] for s in steps] == [7] and steps[0]["wall_us"] == pytest.approx(900.0)


def test_a_step_still_running_as_the_recording_ended_counts_its_part_inside_the_window():
    # Seen in a real capture: the last step's span closed 394 us after the profiler's stop stamp,
    # and its busy + idle time (inside the window) fell short of its wall time by as much.
    builder = XSpaceBuilder()
    builder.task_environment(1000.0)
    modules = builder.plane("/device:TPU:0").line("XLA Modules")
    modules.event("SyncTensorsGraph.1", 100.0, 200.0)
    modules.event("SyncTensorsGraph.1", 700.0, 100.0)
    host = builder.plane("/host:CPU").line("python")
    host.event("train_step", 0.0, 500.0, step_num=7, source="t.py:1")
    host.event("train_step", 500.0, 800.0, step_num=8, source="t.py:1")  # ends at 1300, past the window
    host.event("train_step", 1300.0, 100.0, step_num=9, source="t.py:1")  # wholly after it
    space = read_xspace(builder.to_bytes())
    analysis = analyze(Session("s", "s", {}, [Worker("w", "w", 1, "w.xplane.pb", {}, space)]))
    (steps,) = analysis_json(analysis)["steps"].values()
    assert [(s["step"], s["start_us"], s["wall_us"], s["busy_us"]) for s in steps] == [
        (7, 0.0, 500.0, pytest.approx(200.0)), (8, 500.0, 500.0, pytest.approx(100.0))]
    for s in steps:
        assert s["busy_us"] + sum(s["idle_by_cause_us"].values()) == pytest.approx(s["wall_us"])
