"""Device time reads add to the work running during them: ops overlapping a read count their
time beyond the same op's median outside reads (``analysis.read_slowdown``), on planes built here."""
from __future__ import annotations

import numpy as np

from tests.support.synthetic import training_capture
from xlaprof.analysis import analyze
from xlaprof.analysis.device.device_timeline import DeviceKind, DeviceTimeline
from xlaprof.analysis.host.host_activity import EventSet
from xlaprof.analysis.idle.read_slowdown import MIN_BASELINE, busy_added
from xlaprof.session import Session
from xlaprof.xspace.events import EventTable, IntColumn, Line, Plane
from xlaprof.xspace.vocabulary import PROGRAM_ID_STAT


def _cpu_device(ops: list[tuple[str, float, float]]) -> DeviceTimeline:
    """The CPU device of a host plane whose thunks are ``ops`` (name, start, duration)."""
    names = sorted({name for name, _, _ in ops})
    start = np.array([s for _, s, _ in ops])
    dur = np.array([d for _, _, d in ops])
    events = EventTable(line=np.zeros(len(ops), np.int32), name=np.array([names.index(n) for n, _, _ in ops], np.int32),
                        start_us=start, dur_us=dur)
    plane = Plane("/host:CPU", [Line(0, "tf_XLAPjRtCpuClient", "")], names, events,
                  int_columns={PROGRAM_ID_STAT: IntColumn(np.arange(len(ops)), np.ones(len(ops), np.int64))})
    return DeviceTimeline("CPU:0", DeviceKind.CPU, plane, np.arange(len(ops)), start, start + dur)


def _reads(*intervals: tuple[float, float]) -> EventSet:
    return EventSet(np.arange(len(intervals)), np.array([a for a, _ in intervals], float),
                    np.array([b for _, b in intervals], float), np.zeros(len(intervals), np.int32))


def test_ops_during_a_read_count_their_time_beyond_their_median_outside_reads():
    ops = [("fusion", 100.0 * k, 10.0) for k in range(5)]  # the usual: 10 us, outside reads
    ops += [("fusion", 1000.0, 40.0), ("fusion", 2000.0, 25.0)]  # during the first read, the second
    ops += [("dot", 1010.0, 5.0), ("dot", 3000.0, 7.0)]  # too few outside reads: no baseline
    added = busy_added([_cpu_device(ops)], None, _reads((990.0, 1100.0), (1990.0, 2010.0), (5000.0, 5001.0)))
    assert added.tolist() == [30.0, 15.0, 0.0]


def test_an_op_faster_during_a_read_adds_nothing_and_no_read_means_nothing():
    ops = [("fusion", 100.0 * k, 10.0) for k in range(MIN_BASELINE)] + [("fusion", 1000.0, 4.0)]
    device = _cpu_device(ops)
    assert busy_added([device], None, _reads((995.0, 1010.0))).tolist() == [0.0]
    assert busy_added([device], None, _reads()).size == 0


def test_a_tpu_capture_whose_ops_never_slow_down_gets_no_device_time_added(tmp_path):
    capture = tmp_path / "w_9012.xplane.pb"
    capture.write_bytes(training_capture(steps=12, devices=2, read_every=1))
    analysis = analyze(Session.load(str(capture)))
    assert analysis.reads.count > 0 and analysis.reads.busy_added_us == 0.0
    reading = [f for f in analysis.findings if f.kind.value == "transfer_from_device"]
    assert reading and all(f.busy_added_us == 0.0 and f.cost_us == f.lost_us for f in reading)
