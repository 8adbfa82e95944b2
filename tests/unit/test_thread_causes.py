"""Causes decided by what each thread was doing, on captures built in code.

The frame of every scenario: window [0, 1000], TPU:0 busy [0, 100] and [900, 1000], so one gap
[100, 900]; the training thread is host line 1, its sampler's runs recorded on an emitter line.
"""
from __future__ import annotations

import pytest

from tests.support.synthetic import XSpaceBuilder, add_stack_samples, write_session
from xlaprof.analysis import analyze
from xlaprof.report import analysis_json
from xlaprof.session import Session
from xlaprof.xspace import vocabulary

MAIN = "/work/train.py:10 <module>\n/work/train.py:20 step"
READ_LINE = "/work/train.py:30"
TORCH = "/venv/lib/python3.11/site-packages/torch"
BACKWARD = f"{MAIN}\n/work/train.py:33 step\n{TORCH}/_tensor.py:625 backward\n{TORCH}/autograd/graph.py:841 _engine_run_backward"


def sample_backward(host, begins: float, ends: float) -> None:
    """The training thread in ``loss.backward()`` (train.py:33, blocked in torch) from ``begins`` to
    ``ends``, running its loop's Python before and after."""
    add_stack_samples(host, thread_line_id=1, runs=[(0, begins, "main"), (begins, ends, "backward"), (ends, 1000, "main")],
                      stacks={"main": MAIN, "backward": BACKWARD}, cpu_share={"main": 1.0, "backward": 0.05})


def frame():
    builder = XSpaceBuilder()
    builder.task_environment(1000.0)
    host = builder.plane(vocabulary.HOST_PLANE)
    modules = builder.plane("/device:TPU:0").line("XLA Modules")
    modules.event("SyncTensorsGraph.1", 0, 100)
    modules.event("SyncTensorsGraph.2", 900, 100)
    return builder, host


def engine_frame(sync_at: float = 850):
    """``frame()`` with the training thread's sync at ``sync_at`` and the autograd engine's thread,
    which runs no Python, as host line 2: (builder, host, engine line)."""
    builder, host = frame()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", sync_at, 30)
    return builder, host, host.line("pt_autograd_0", line_id=2)


def report(tmp_path, builder) -> dict:
    session = write_session(str(tmp_path), "run", {"w_9012": builder.to_bytes()})
    return analysis_json(analyze(Session.load(session)))


def test_a_compile_inside_a_read_is_compile_at_the_reads_line(tmp_path):
    """A read forces the compile of the graph it needs (``.item()`` on a new graph, a library's
    ``x in t``): the compile's time is compile, not the read's, and its line is the read's, whatever
    the sampler (kept off the GIL through the compile) showed meanwhile."""
    builder, host = frame()
    python = host.line("python", line_id=1)
    python.event(vocabulary.READ_CALL_EVENT, 100, 700, **{vocabulary.PY_READ_STACK_STAT: f"{MAIN}\n{READ_LINE} step"})
    python.event("XLAGraphExecutor::Compile", 150, 550, graph_hash="abc")
    python.event("TensorCollectionBarrier", 705, 40)
    python.event("PjRtComputationClient::TransferFromDevice", 750, 40)
    stacks = {"main": MAIN, "after": f"{MAIN}\n/work/lib.py:3 helper"}  # what the thread ran after the read
    add_stack_samples(host, thread_line_id=1, runs=[(0, 100, "main"), (100, 1000, "after")], stacks=stacks,
                      cpu_share={"main": 1.0, "after": 1.0})
    out = report(tmp_path, builder)
    idle = out["idle_by_cause_us"]
    assert idle["compile"] == pytest.approx(550.0)
    # The read's own time is its call outside the compile: [100, 150] and [700, 800].
    assert idle["transfer_from_device"] == pytest.approx(150.0)
    assert [e["source"] for e in out["compile_events"]] == [READ_LINE]
    compile_lines = {row["source"] for row in out["idle_by_line"] if row["cause"] == "compile"}
    assert compile_lines == {READ_LINE}


def test_a_span_open_around_a_blocked_thread_does_not_make_it_tracing(tmp_path):
    """Time under a user's span is what the thread did: blocked in a sleep there is host_blocked."""
    builder, host = frame()
    python = host.line("python", line_id=1)
    python.event("train_step", 50, 900, source="/work/train.py:20", step_num=0)
    python.event("SyncTensorsGraphInternal", 860, 30)
    stacks = {"main": MAIN, "sleep": f"{MAIN}\n/work/train.py:25 step\n/usr/lib/python3.11/threading.py:327 wait"}
    add_stack_samples(host, thread_line_id=1, runs=[(0, 120, "main"), (120, 850, "sleep"), (850, 1000, "main")],
                      stacks=stacks, cpu_share={"main": 1.0, "sleep": 0.01})
    out = report(tmp_path, builder)
    idle = out["idle_by_cause_us"]
    # [120, 850] but its last 1%: the thread ran on after the sleep (the run's 1% on a CPU)
    assert idle["host_blocked"] == pytest.approx(730.0 * 0.99, abs=0.5)  # the sampler records whole microseconds
    assert idle["host_tracing"] == pytest.approx(70.0 + 730.0 * 0.01, abs=0.5)  # [100, 120], [850, 900] and that 1%
    blocked = next(f for f in out["findings"] if f["kind"] == "host_blocked")
    assert blocked["source"] == "/work/train.py:25" and blocked["span"] == "train_step"


SLEEP = f"{MAIN}\n/work/train.py:25 step"  # time.sleep, a C function: the sampler shows the line calling it
LIBRARY = "/venv/lib/python3.11/site-packages/transformers/utils/generic.py"


@pytest.mark.parametrize("seen_there, cause", [(False, "host_tracing"), (True, "host_blocked")])
def test_time_off_the_cpus_at_a_line_never_found_blocked_is_not_that_lines_block(tmp_path, seen_there, cause):
    """The training thread sleeps [100, 120] in a call the sampler found it blocked in (its sampler
    tells), then is off the CPUs through [120, 850] at a library's line of its forward. Where the
    sampler never found it blocked at that line (it ran Python there at each sample, and slept
    between two samples past it: the runtime's wait, in a call the next sample no longer showed),
    that time is not the line's block: tracing. Where it did, the line blocks: host_blocked."""
    builder, host = frame()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", 860, 30)
    stacks = {"main": MAIN, "sleep": SLEEP, "lib": f"{MAIN}\n{LIBRARY}:468 __post_init__"}
    add_stack_samples(host, thread_line_id=1, runs=[(0, 100, "main"), (100, 120, "sleep"), (120, 850, "lib"),
                                                    (850, 1000, "main")],
                      stacks=stacks, cpu_share={"main": 1.0, "sleep": 0.0, "lib": 0.01},
                      blocked_share={"sleep": 1.0, **({"lib": 0.5} if seen_there else {})})
    costs = line_costs(report(tmp_path, builder))
    assert costs[("/work/train.py:25", "host_blocked")] == pytest.approx(20.0)
    assert costs[(f"{LIBRARY}:468", cause)] == pytest.approx(730.0 if cause == "host_tracing" else 730.0 * 0.99, abs=1.0)


def line_costs(out: dict) -> dict[tuple[str, str], float]:
    return {(row["source"], row["cause"]): row["idle_us"] for row in out["idle_by_line"]}


def test_a_blocking_lines_time_after_it_returned_is_the_next_lines(tmp_path):
    """The thread sleeps [100, 500], then runs on into its forward; the sampler, backed off on a busy
    host, saw the forward only at 600: the sleep's run [100, 600] was on a CPU 20% of its time. Its
    blocked time comes first (a sleep returns, then the thread runs), and the time after it is the
    forward's, which the sampler saw late: not tracing at the sleep's line."""
    builder, host = frame()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", 920, 30)
    stacks = {"main": MAIN, "sleep": SLEEP, "forward": f"{MAIN}\n/work/model.py:5 forward"}
    add_stack_samples(host, thread_line_id=1, runs=[(0, 100, "main"), (100, 600, "sleep"), (600, 900, "forward"),
                                                    (900, 1000, "main")],
                      stacks=stacks, cpu_share={"main": 1.0, "sleep": 0.2, "forward": 1.0})
    out = report(tmp_path, builder)
    assert out["idle_by_cause_us"]["host_blocked"] == pytest.approx(400.0)
    assert out["idle_by_cause_us"]["host_tracing"] == pytest.approx(400.0)
    costs = line_costs(out)
    assert costs[("/work/train.py:25", "host_blocked")] == pytest.approx(400.0)
    assert costs[("/work/model.py:5", "host_tracing")] == pytest.approx(400.0)  # [500, 900]
    assert ("/work/train.py:25", "host_tracing") not in costs


def test_a_sleep_the_sampler_saw_late_after_a_sync_is_blocked_not_the_syncs_work(tmp_path):
    """``torch_xla.sync()`` [100, 300] (waiting in torch_xla: the runtime at work), then a sleep the
    sampler, backed off on a busy host, saw only at 600: its run in the sync's stack lasted to 600, off
    the CPUs throughout. Once the sync returned the thread was no longer in the runtime: [300, 600] is
    blocked, named by the line the sampler saw next, the sleep's."""
    builder, host = frame()
    host.line("python", line_id=1).event("SyncLiveTensorsGraph", 100, 200)
    sync = f"{MAIN}\n/work/train.py:24 step\n/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:80 sync"
    add_stack_samples(host, thread_line_id=1, runs=[(0, 100, "main"), (100, 600, "sync"), (600, 900, "sleep"),
                                                    (900, 1000, "main")],
                      stacks={"main": MAIN, "sync": sync, "sleep": SLEEP},
                      cpu_share={"main": 1.0, "sync": 0.0, "sleep": 0.0})
    out = report(tmp_path, builder)
    assert out["idle_by_cause_us"]["host_tracing"] == pytest.approx(200.0)  # the sync's own event
    assert out["idle_by_cause_us"]["host_blocked"] == pytest.approx(600.0)
    assert line_costs(out)[("/work/train.py:25", "host_blocked")] == pytest.approx(600.0)


def test_time_off_the_cpus_no_longer_than_a_sync_it_ran_past_was_spent_in_that_sync(tmp_path):
    """``torch_xla.sync()`` [100, 400], its run in the sync's stack lasting to 600 (the sampler saw the
    next line late), 300 us of it off the CPUs: as long as the sync, in which the thread waited. The
    thread ran on after the sync returned, so [400, 600] is the next lines' Python, not a block (in
    proportion, 120 us of it were blocked)."""
    builder, host = frame()
    host.line("python", line_id=1).event("SyncLiveTensorsGraph", 100, 300)
    sync = f"{MAIN}\n/work/train.py:24 step\n/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:80 sync"
    add_stack_samples(host, thread_line_id=1, runs=[(0, 100, "main"), (100, 600, "sync"), (600, 1000, "main")],
                      stacks={"main": MAIN, "sync": sync}, cpu_share={"main": 1.0, "sync": 0.4})
    out = report(tmp_path, builder)
    assert out["idle_by_cause_us"]["host_blocked"] == pytest.approx(0.0)
    assert out["idle_by_cause_us"]["host_tracing"] == pytest.approx(800.0)


@pytest.mark.parametrize("loader_runs, blocked", [(True, 420.0), (False, 0.0)])
def test_time_off_the_cpus_while_a_loader_thread_ran_python_is_blocked_even_in_torch(tmp_path, loader_runs, blocked):
    """The training thread in ``loss.backward()`` [100, 800] (in torch: the runtime at work) was off the
    CPUs 60% of that run. Where the process's loader thread ran Python meanwhile, the training thread
    waited for the GIL the loader held: blocked, waiting for input. With no other Python thread
    running, the same run is the runtime's work."""
    builder, host = frame()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", 920, 30)
    add_stack_samples(host, thread_line_id=1, runs=[(0, 100, "main"), (100, 800, "backward"), (800, 1000, "main")],
                      stacks={"main": MAIN, "backward": BACKWARD}, cpu_share={"main": 1.0, "backward": 0.4})
    if loader_runs:
        host.line("loader", line_id=3).event("TensorCollectionBarrier", 10, 5)  # the loader thread's own line
        host.line(f"{vocabulary.STACK_LINE_PREFIX}loader").event("collate", 0, 1000, **{
            vocabulary.PY_STACK_STAT: "/usr/lib/python3.11/threading.py:1002 _bootstrap\n/work/data.py:13 collate",
            vocabulary.PY_THREAD_STAT: 3, vocabulary.PY_THREAD_NAME_STAT: "loader", vocabulary.PY_CPU_STAT: 1000})
    idle = report(tmp_path, builder)["idle_by_cause_us"]
    assert idle["host_blocked"] == pytest.approx(blocked)
    assert idle["host_tracing"] == pytest.approx(800.0 - blocked)


def one_traceme_report(tmp_path, name: str) -> dict:
    """The frame with one TraceMe ``name`` on the Python thread over [100, 800] and a sync at 850."""
    builder, host = frame()
    python = host.line("python", line_id=1)
    python.event(name, 100, 700)
    python.event("SyncTensorsGraphInternal", 850, 30)
    return report(tmp_path, builder)


@pytest.mark.parametrize("name", ["cpu_loader.next", "sharding-removal", "LowerAffinePass"])
def test_library_and_compiler_events_are_never_the_users_spans(tmp_path, name):
    """torch_xla's own xp.Trace spans and the XLA compiler's passes name no finding's span."""
    out = one_traceme_report(tmp_path, name)
    assert not any(f["span"] == name for f in out["findings"]), out["findings"]
    assert not any(g["span"] == name for g in out["gaps"])


@pytest.mark.parametrize("name", ["train_step", "data_load", "forward"])
def test_a_users_xp_trace_is_a_span(tmp_path, name):
    out = one_traceme_report(tmp_path, name)
    assert any(f["span"] == name for f in out["findings"]), out["findings"]


def line_in_two_spans():
    """The frame where the training thread runs /work/train.py:40 in span make_batch [100, 400] and
    in span forward [400, 800], the loop's line between them (where the next span opens)."""
    builder, host = frame()
    python = host.line("python", line_id=1)
    python.event("make_batch", 100, 300)
    python.event("forward", 400, 400)
    python.event("SyncTensorsGraphInternal", 850, 30)
    stacks = {"main": MAIN, "work": f"{MAIN}\n/work/train.py:40 helper"}
    runs = [(0, 100, "main"), (100, 398, "work"), (398, 402, "main"), (402, 800, "work"), (800, 1000, "main")]
    add_stack_samples(host, thread_line_id=1, runs=runs, stacks=stacks, cpu_share={"main": 1.0, "work": 1.0})
    return builder


def test_one_finding_per_cause_and_line_with_its_spans_inside(tmp_path):
    """A line whose time fell in two spans is one finding: the spans are its breakdown."""
    out = report(tmp_path, line_in_two_spans())
    at_line = [f for f in out["findings"] if f["source"] == "/work/train.py:40"]
    assert len(at_line) == 1, at_line
    (finding,) = at_line
    # [398, 402]: the loop's line, but forward opened at 400 after that run began: the sampler's run is
    # stale there and the line seen next (40) names it.
    assert finding["span"] == "forward" and finding["lost_us"] == pytest.approx(700.0)
    assert finding["spans"] == [{"span": "forward", "lost_us": pytest.approx(402.0)},
                                {"span": "make_batch", "lost_us": pytest.approx(298.0)}]
    assert "in 2 spans (forward, make_batch)" in finding["detail"]


def test_a_line_in_a_span_the_windows_start_cut_is_named_by_its_span(tmp_path):
    """The window starts inside a train_step: the profiler does not record that span's event, so
    /work/train.py:40's time in it, [0, 300], is outside any span, and more than its time in the next
    train_step [400, 800], which is recorded. The finding is the span's: time outside any span
    stays in the breakdown."""
    builder, host = frame()
    python = host.line("python", line_id=1)
    python.event("train_step", 400, 400)
    python.event("SyncTensorsGraphInternal", 850, 30)
    stacks = {"main": MAIN, "work": f"{MAIN}\n/work/train.py:40 helper"}
    runs = [(0, 300, "work"), (300, 402, "main"), (402, 500, "work"), (500, 1000, "main")]
    add_stack_samples(host, thread_line_id=1, runs=runs, stacks=stacks, cpu_share={"main": 1.0, "work": 1.0})
    out = report(tmp_path, builder)
    (finding,) = [f for f in out["findings"] if f["source"] == "/work/train.py:40"]
    assert [row["span"] for row in finding["spans"]] == [None, "train_step"], finding["spans"]
    assert finding["spans"][0]["lost_us"] > finding["spans"][1]["lost_us"]
    assert finding["span"] == "train_step"


def test_a_read_on_a_thread_without_python_is_at_the_line_that_waits_for_it(tmp_path):
    """An op's CPU fallback run by the autograd engine's thread inside ``loss.backward()`` reads on a
    thread the sampler never saw: the read is named at the training thread's line, the backward."""
    builder, host, engine = engine_frame()
    engine.event("TensorCollectionBarrier", 300, 20)
    engine.event("PjRtComputationClient::TransferFromDevice", 320, 80)
    sample_backward(host, 200, 800)
    out = report(tmp_path, builder)
    assert out["transfers_from_device"]["by_source"] == {"/work/train.py:33": 1}
    read = next(f for f in out["findings"] if f["kind"] == "transfer_from_device")
    assert read["source"] == "/work/train.py:33"


CLOSURE = "/usr/lib/python3.11/threading.py:1002 _bootstrap\n/work/train.py:12 log"
WAITING = "/usr/lib/python3.11/threading.py:1002 _bootstrap\n/usr/lib/python3.11/queue.py:180 get"


@pytest.mark.parametrize(("reader", "read_idle"), [(1, 550.0), (7, 55.0)])
def test_a_read_on_another_python_thread_costs_only_the_cpu_it_takes(tmp_path, reader, read_idle):
    """A read [100, 650] on the training thread (line 1) holds it: the gap is the read's until the read
    returned. The same read on another Python thread (line 7, a ``run_async`` step closure's
    ``.item()``, its thread on a CPU a tenth of the time) leaves the training thread running its Python: the read
    holds only its thread's CPU time, at its end (the transfer, once the device finished), and the rest
    of the gap is the training thread's tracing. Either way the read is at its own line."""
    builder, host = frame()
    host.line("python", line_id=1).event("SyncTensorsGraphInternal", 860, 30)
    reading = host.line("closure", line_id=7) if reader == 7 else host.line("python", line_id=1)
    reading.event(vocabulary.READ_CALL_EVENT, 100, 550, **{vocabulary.PY_READ_STACK_STAT: CLOSURE})
    reading.event("TensorCollectionBarrier", 105, 20)
    reading.event("PjRtComputationClient::TransferFromDevice", 600, 40)
    add_stack_samples(host, thread_line_id=1, runs=[(0, 1000, "main")], stacks={"main": MAIN}, cpu_share={"main": 1.0})
    add_stack_samples(host, thread_line_id=7, runs=[(0, 100, "wait"), (100, 1000, "log")],
                      stacks={"wait": WAITING, "log": CLOSURE}, cpu_share={"wait": 0.0, "log": 0.1},
                      thread_name="Thread-1 (event_loop)")
    out = report(tmp_path, builder)
    idle = out["idle_by_cause_us"]
    assert idle["transfer_from_device"] == pytest.approx(read_idle)
    assert idle["host_tracing"] == pytest.approx(800.0 - read_idle)
    assert out["transfers_from_device"]["by_source"] == {"/work/train.py:12": 1}


def test_a_read_without_python_is_at_the_backward_the_sampler_placed_a_little_early(tmp_path):
    """The sampler placed the training thread's runs up to a few ms off: the engine thread's read
    [860, 880] falls in the run after the backward (the optimizer's step, train.py:34), 60 us after
    the backward's run ended; the call that waited for it is still the backward, the nearest run
    inside the autograd engine's entry."""
    builder, host, engine = engine_frame(sync_at=950)
    engine.event("PjRtComputationClient::TransferFromDevice", 860, 20)
    optimizer = f"{MAIN}\n/work/train.py:34 step\n{TORCH}/optim/sgd.py:80 step"
    add_stack_samples(host, thread_line_id=1, runs=[(0, 100, "main"), (100, 800, "backward"), (800, 900, "optimizer"),
                                                     (900, 1000, "main")],
                      stacks={"main": MAIN, "backward": BACKWARD, "optimizer": optimizer},
                      cpu_share={"main": 1.0, "backward": 0.05, "optimizer": 1.0})
    out = report(tmp_path, builder)
    assert out["transfers_from_device"]["by_source"] == {"/work/train.py:33": 1}


def test_an_ops_cpu_fallback_is_a_read_until_its_result_is_uploaded(tmp_path):
    """The autograd engine's thread runs an op's CPU fallback: its input read (a transfer of 80 us),
    the op computed on the CPU (no event, 300 us), its result uploaded (20 us). The whole call is
    the read, named at the training thread's backward line; an upload after the thread's next
    runtime event is another op's."""
    builder, host, engine = engine_frame()
    engine.event("PjRtComputationClient::TransferFromDevice", 120, 80)
    engine.event("PjRtComputationClient::TransferToDevice", 500, 20)
    engine.event("PjRtComputationClient::TransferFromDevice", 600, 50)
    engine.event("SyncTensorsGraphInternal", 700, 10)
    engine.event("PjRtComputationClient::TransferToDevice", 750, 20)
    sample_backward(host, 100, 840)
    out = report(tmp_path, builder)
    assert out["transfers_from_device"]["by_source"] == {"/work/train.py:33": 2}
    read = next(f for f in out["findings"] if f["kind"] == "transfer_from_device")
    assert read["lost_us"] == pytest.approx((520 - 120) + (650 - 600))


def test_steps_without_spans_run_from_one_sync_to_the_next(tmp_path):
    """No step spans and no device Steps line: the training thread's explicit syncs bound the steps."""
    builder, host = frame()
    python = host.line("python", line_id=1)
    for start in (90, 490, 880):
        python.event("StepMarker", start, 10)
    out = report(tmp_path, builder)
    (steps,) = out["steps"].values()
    assert [(s["name"], s["start_us"], s["wall_us"]) for s in steps] == [("step 0", 100.0, 400.0),
                                                                          ("step 1", 500.0, 390.0)]


def test_a_compile_on_a_thread_without_python_is_at_the_line_that_waits_for_it(tmp_path):
    """The autograd engine's thread compiles the graph an op's CPU fallback needs inside
    ``loss.backward()``: the compile is named at the training thread's backward line."""
    builder, host, engine = engine_frame()
    engine.event("XLAGraphExecutor::Compile", 250, 400, graph_hash="g")
    sample_backward(host, 200, 800)
    out = report(tmp_path, builder)
    assert [e["source"] for e in out["compile_events"]] == ["/work/train.py:33"]


LOADER_COLLATE = "/usr/lib/python3.11/threading.py:1002 _bootstrap\n/work/data.py:12 collate\n/work/data.py:13 collate"
# A loader thread waiting for a DataLoader's worker processes, and one working in torch's own code
# (no line of the user's or a library's to name): neither is a root.
LOADER_WAITS_FOR_WORKERS = ("/usr/lib/python3.11/threading.py:1002 _bootstrap\n"
                            "/v/lib/python3.11/site-packages/torch/utils/data/dataloader.py:1133 _get_data\n"
                            "/usr/lib/python3.11/multiprocessing/connection.py:257 poll\n"
                            "/usr/lib/python3.11/multiprocessing/connection.py:947 wait\n"
                            "/usr/lib/python3.11/selectors.py:415 select")
LOADER_IN_TORCH = ("/usr/lib/python3.11/threading.py:1002 _bootstrap\n"
                   "/v/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py:52 fetch")


@pytest.mark.parametrize("loader_stack, named", [
    (LOADER_COLLATE, "/work/data.py:13"),
    (LOADER_WAITS_FOR_WORKERS, "/work/train.py:50"),
    (LOADER_IN_TORCH, "/work/train.py:50"),
])
def test_a_thread_waiting_for_a_loader_is_named_by_what_the_loader_did(tmp_path, loader_stack, named):
    """The training thread waits in a queue's get (MpDeviceLoader) while the loader thread sleeps in a
    slow collate: the blocked time is the main thread's, named at the collate's line. A loader thread
    that itself waits (for a DataLoader's worker processes), or works with no line to name, is no
    root: the training thread's own line (its loader call) names the wait."""
    builder, host = frame()
    python = host.line("python", line_id=1)
    python.event("SyncTensorsGraphInternal", 850, 30)
    host.line("loader", line_id=3).event("TensorCollectionBarrier", 10, 5)  # the loader thread's own line
    wait = f"{MAIN}\n/work/train.py:50 step\n/v/lib/python3.11/site-packages/torch_xla/distributed/parallel_loader.py:" \
           "40 next\n/usr/lib/python3.11/queue.py:171 get\n/usr/lib/python3.11/threading.py:327 wait"
    add_stack_samples(host, thread_line_id=1, runs=[(0, 120, "main"), (120, 840, "wait"), (840, 1000, "main")],
                      stacks={"main": MAIN, "wait": wait}, cpu_share={"main": 1.0, "wait": 0.01})
    loader = host.line(f"{vocabulary.STACK_LINE_PREFIX}loader")
    loader.event("loader", 0, 1000, **{vocabulary.PY_STACK_STAT: loader_stack, vocabulary.PY_THREAD_STAT: 3,
                                                    vocabulary.PY_THREAD_NAME_STAT: "loader",
                                                    vocabulary.PY_CPU_STAT: 5})
    out = report(tmp_path, builder)
    assert out["idle_by_cause_us"]["host_blocked"] == pytest.approx(720.0 * 0.99, abs=0.5)  # [120, 840] but its 1% on a CPU
    blocked = next(f for f in out["findings"] if f["kind"] == "host_blocked")
    assert blocked["source"] == named
