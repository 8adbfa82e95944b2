"""The Python stack sampler in real torch_xla workers on the CPU device: the samples, their
thread's line, what xprof shows of them, and what the sampler must not do."""
from __future__ import annotations

import collections
import glob
import os
import textwrap

import pytest

from tests.integration.test_collectors import _lines_of, _run_script
from tests.support.oracle import xprof_trace
from xlaprof.session import Session
from xlaprof.xspace import vocabulary

pytestmark = pytest.mark.torch_xla

Sample = collections.namedtuple("Sample", "name line_id line_name start_us dur_us stack thread thread_name")

READER_SCRIPT = textwrap.dedent('''
    import json, sys, threading, torch, torch_xla, xlaprof
    dev = torch_xla.device()

    def read_loss(x):
        return (x @ x).sum().item()  # the blocking read

    def reader():
        x = torch.randn(384, 384, device=dev)
        for i in range(40):
            read_loss(x)  # the call

    read_loss(torch.randn(384, 384, device=dev))  # compiled before the capture
    with xlaprof.profile(sys.argv[1]) as run:
        worker = threading.Thread(target=reader, name="reader")
        worker.start()
        worker.join()
    print(json.dumps({"path": run.path}))
''')


def samples_of(plane) -> list[Sample]:
    """The stack sample events of a host plane."""
    stats = plane.stats
    stacks = stats.column(vocabulary.PY_STACK_STAT)
    threads, names = stats.column(vocabulary.PY_THREAD_STAT), stats.column(vocabulary.PY_THREAD_NAME_STAT)
    events = plane.events
    return [Sample(plane.names[events.name[r]], plane.lines[events.line[r]].id, plane.lines[events.line[r]].name,
                   float(events.start_us[r]), float(events.dur_us[r]), stacks[r], threads[r], names[r])
            for r in sorted(stacks)]


def line_ids_of(plane, event_names) -> set[int]:
    return {plane.lines[plane.events.line[r]].id for r in plane.rows_named(event_names)}


def test_a_blocking_read_is_sampled_on_its_threads_line(tmp_path):
    run = _run_script(tmp_path, "train.py", READER_SCRIPT)
    plane = Session.load(run["path"]).workers[0].space.plane(vocabulary.HOST_PLANE)
    script = str(tmp_path / "train.py")
    read_line = _lines_of(READER_SCRIPT, "the blocking read")
    samples = samples_of(plane)
    reads = [s for s in samples if s.name == f"train.py:{read_line} read_loss"]
    assert reads, collections.Counter(s.name for s in samples)
    (reader_line,) = line_ids_of(plane, vocabulary.TRANSFER_FROM_DEVICE)
    for sample in reads:
        # the py_thread of the read is the line of that thread's own TraceMe events
        assert sample.thread == reader_line and sample.thread_name == "reader"
        assert sample.line_name == "py reader" and sample.line_id != reader_line
        frames = sample.stack.split("\n")
        assert frames[-1] == f"{script}:{read_line} read_loss"
        assert frames[-2] == f"{script}:{_lines_of(READER_SCRIPT, 'the call')} reader"
        assert frames[0].endswith(" Thread._bootstrap")
    # the reads took most of the thread's time, so most of its sampled time is in them
    reader_samples = [s for s in samples if s.thread == reader_line]
    assert sum(s.dur_us for s in reads) > 0.5 * sum(s.dur_us for s in reader_samples)
    # coalesced (one event per run, at most MAX_EVENT_S long) and never overlapping on a line
    assert max(s.dur_us for s in samples) < 0.2e6
    for line_id in {s.line_id for s in samples}:
        on_line = sorted((s.start_us, s.start_us + s.dur_us) for s in samples if s.line_id == line_id)
        assert all(end <= next_start + 1e-3 for (_, end), (next_start, _) in zip(on_line, on_line[1:]))
    # the main thread waited in join: sampled too, on its own line
    main = [s for s in samples if s.thread_name == "MainThread"]
    assert main and {s.line_name for s in main} == {"py MainThread"}
    assert any(f"{script}:{_lines_of(READER_SCRIPT, 'worker.join()')} <module>" in s.stack for s in main)

    # xprof's trace viewer shows each sampled thread as a line named "py <thread>" of readable events
    (path,) = glob.glob(os.path.join(run["path"], "*.xplane.pb"))
    events = xprof_trace(path)["traceEvents"]
    line_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                  if e.get("ph") == "M" and e["name"] == "thread_name"}
    shown = [e for e in events if e.get("ph") == "X" and e["name"] == f"train.py:{read_line} read_loss"]
    assert len(shown) == len(reads)
    assert {line_names[(e["pid"], e["tid"])] for e in shown} == {"py reader"}
    assert shown[0]["args"][vocabulary.PY_STACK_STAT] == reads[0].stack
