"""The Python stack sampler in real torch_xla workers on the CPU device: the samples, their
thread's line, what xprof shows of them, and what the sampler must not do."""
from __future__ import annotations

import collections
import glob
import json
import os
import textwrap

import pytest

from tests.integration.test_collectors import _lines_of, _run_script, _script_process
from tests.support.oracle import xprof_trace
from tests.support.workers import SYNC_COUNTS, run_cli
from xlaprof.session import Session
from xlaprof.xspace import vocabulary

pytestmark = pytest.mark.torch_xla

Sample = collections.namedtuple("Sample", "name line_id line_name start_us dur_us stack thread thread_name lag_us")

READER_SCRIPT = textwrap.dedent('''
    import json, sys, threading, time, torch, torch_xla, xlaprof
    dev = torch_xla.device()

    def read_loss(x):
        return (x @ x).sum().item()  # the blocking read

    def reader():
        for i in range(40):
            read_loss(x)  # the call

    # compiled before the capture: the tensor too (a randn made on a new thread is a new graph), as
    # a compile holds the GIL, and no emitter could cut its events at MAX_EVENT_S through it
    x = torch.randn(384, 384, device=dev)
    read_loss(x)
    with xlaprof.profile(sys.argv[1]) as run:
        worker = threading.Thread(target=reader, name="reader")
        worker.start()
        worker.join()
        time.sleep(0.2)  # the reader has ended, the capture goes on
        threads_after_exit = sorted(t.name for t in threading.enumerate())
    print(json.dumps({"path": run.path, "threads_after_exit": threads_after_exit}))
''')


def samples_of(plane) -> list[Sample]:
    """The stack sample events of a host plane."""
    stats = plane.stats
    stacks = stats.column(vocabulary.PY_STACK_STAT)
    threads, names = stats.column(vocabulary.PY_THREAD_STAT), stats.column(vocabulary.PY_THREAD_NAME_STAT)
    lags = stats.column(vocabulary.PY_LAG_STAT)
    events = plane.events
    return [Sample(plane.names[events.name[r]], plane.lines[events.line[r]].id, plane.lines[events.line[r]].name,
                   float(events.start_us[r]), float(events.dur_us[r]), stacks[r], threads[r], names[r],
                   float(lags.get(r, 0)))
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
    # the reader ended mid-capture: its emitter ended too, after closing its last event
    assert "xlaprof-stack reader" not in run["threads_after_exit"]
    assert "xlaprof-stack MainThread" in run["threads_after_exit"]
    last_read_end = max(s.start_us + s.dur_us for s in reader_samples)
    assert last_read_end < max(s.start_us for s in samples if s.thread_name == "MainThread")
    # the main thread waited in join: sampled too, on its own line
    main = [s for s in samples if s.thread_name == "MainThread"]
    assert main and {s.line_name for s in main} == {"py MainThread"}
    assert any(f"{script}:{_lines_of(READER_SCRIPT, 'worker.join()')} <module>" in s.stack for s in main)
    # profile() closed the open events before it stopped recording: the whole last sleep is there (its
    # events from their samples: the main thread's emitter takes them up to DRAIN_S later)
    sleep_frame = f"{script}:{_lines_of(READER_SCRIPT, 'time.sleep(0.2)')} <module>"
    assert sum(s.dur_us + s.lag_us for s in main if s.stack.endswith(sleep_frame)) > 0.18e6

    # xprof's trace viewer shows each sampled thread as a line named "py <thread>" of readable events
    (path,) = glob.glob(os.path.join(run["path"], "*.xplane.pb"))
    events = xprof_trace(path)["traceEvents"]
    line_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                  if e.get("ph") == "M" and e["name"] == "thread_name"}
    shown = [e for e in events if e.get("ph") == "X" and e["name"] == f"train.py:{read_line} read_loss"]
    assert len(shown) == len(reads)
    assert {line_names[(e["pid"], e["tid"])] for e in shown} == {"py reader"}
    assert shown[0]["args"][vocabulary.PY_STACK_STAT] == reads[0].stack


def test_a_remote_capture_by_the_cli_holds_the_samples(real_capture_path):
    """The demo worker (xlaprof.start_server, defaults) captured by ``xlaprof capture``."""
    import collectors.demo_worker as demo

    plane = Session.load(os.path.dirname(real_capture_path)).workers[0].space.plane(vocabulary.HOST_PLANE)
    samples = samples_of(plane)
    with open(demo.__file__) as handle:
        sync_line = next(i for i, line in enumerate(handle, 1) if line.strip() == "torch_xla.sync()")
    # The step's sync, which compiles a new graph at every step of this worker: seconds of samples. (Its
    # 0.3 ms .item() is named by its read mark; the sampler, unbiased since the main thread is tripped,
    # lands in it only now and then.)
    step_frame = f"{demo.__file__}:{sync_line} demo_step.<locals>.run"
    syncs = [s for s in samples if step_frame in s.stack.split("\n")]
    assert syncs, collections.Counter(s.name for s in samples).most_common(5)
    (main_line,) = line_ids_of(plane, vocabulary.TRANSFER_FROM_DEVICE)  # the training thread reads
    assert {(s.thread, s.thread_name, s.line_name) for s in syncs} == {(main_line, "MainThread", "py MainThread")}
    # the thread watching stdin is sampled too; xlaprof's own threads are not
    assert {s.thread_name for s in samples} == {"MainThread", "Thread-1 (_exit_when_stdin_closes)"}


NO_SYNC_SCRIPT = SYNC_COUNTS + textwrap.dedent('''
    import json, sys, threading, time, torch, torch_xla, xlaprof
    from collectors import stack_sampler
    dev = torch_xla.device()
    x = torch.randn(64, 64, device=dev)

    def loop():
        before = counts()
        for i in range(20):
            y = (x @ x).relu().sum()
            torch_xla.sync()
            if i % 4 == 0:
                y.item()
        return [a - b for a, b in zip(counts(), before)]

    loop()  # compiled
    runs = {}
    for hz in (0, 10000):
        held_ns, started = stack_sampler.gil_held_ns(threading.get_ident()), time.monotonic_ns()
        with xlaprof.profile(sys.argv[1], name=f"hz{hz}", stack_hz=hz) as run:
            counted = loop()
            # A capture long enough for many samples, whatever the machine's speed: four more loops lasted
            # 40 ms on a loaded machine, whose emitter, kept off a core for 30 ms of it, took 10 samples.
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                loop()
        runs[hz] = {"counts": counted, "path": run.path, "wall_ns": time.monotonic_ns() - started,
                    "gil_held_ns": stack_sampler.gil_held_ns(threading.get_ident()) - held_ns}
    print(json.dumps({"no capture": loop(), "runs": runs}))
''')


def test_the_sampler_adds_no_device_transfer_nor_sync_is_off_at_0_and_counts_its_gil(tmp_path):
    result = _run_script(tmp_path, "nosync.py", NO_SYNC_SCRIPT)
    runs = result["runs"]
    assert result["no capture"] == [5, 20]  # the counters are live
    assert runs["0"]["counts"] == runs["10000"]["counts"] == result["no capture"]
    # the GIL the main thread's emitter held, kept once it ended: none at 0
    assert runs["0"]["gil_held_ns"] == 0 < runs["10000"]["gil_held_ns"] < runs["10000"]["wall_ns"]
    sampled = {hz: samples_of(Session.load(run["path"]).workers[0].space.plane(vocabulary.HOST_PLANE))
               for hz, run in runs.items()}
    assert sampled["0"] == [] and len(sampled["10000"]) > 10


GIL_SCRIPT = textwrap.dedent('''
    import json, sys, time, torch, torch_xla, xlaprof
    import torch_xla.core.xla_model as xm
    from tests.support.gil_hold import range_lasting
    dev = torch_xla.device()
    w = torch.randn(64, 64, device=dev)

    def work():
        x = torch.ones(64, 64, device=dev)
        for _ in range(10):
            x = torch.tanh(x @ w)
        torch_xla.sync()

    numbers = range_lasting(0.2)  # its sum keeps the GIL as gc.collect() does on a big heap
    for _ in range(2):  # the window's graph compiled
        work()
    xm.wait_device_ops()
    # a sum at the capture's start, as Trainer.train() begins with gc.collect(); timed on its line
    with xlaprof.profile(sys.argv[1]) as run:
        t0 = time.perf_counter(); sum(numbers); t1 = time.perf_counter()  # at the capture's start
        work()
        t2 = time.perf_counter(); sum(numbers); t3 = time.perf_counter()  # between two steps
        work()
        xm.wait_device_ops()
    print(json.dumps({"path": run.path, "first_s": t1 - t0, "second_s": t3 - t2}))
''')


@pytest.mark.exclusive  # the emitter must get a core within milliseconds of the C call's return
def test_a_call_that_keeps_the_gil_is_the_host_running_python_at_its_line(tmp_path):
    """A long C call that keeps the GIL (so no sample can read the stack until it returns), at a
    capture's start and between two steps, is the host running Python: not a wait for input, nor
    time no stack explains. It is named where the thread first lets go of the GIL: at the call's
    line, or, where another thread took the GIL first, in the call on the next line (``work()``)."""
    from xlaprof.analysis import analyze
    from xlaprof.report import analysis_json

    result = _run_script(tmp_path, "gil.py", GIL_SCRIPT)
    analysis = analyze(Session.load(result["path"]))
    report = analysis_json(analysis)
    idle, by_cause = report["device_idle_us"], report["idle_by_cause_us"]
    seen = _what_the_capture_held(analysis, result)
    assert by_cause["host_tracing"] > 0.85 * idle, (by_cause, seen)
    script = tmp_path / "gil.py"
    for comment, held_s in (("# at the capture's start", result["first_s"]),
                            ("# between two steps", result["second_s"])):
        line = _lines_of(GIL_SCRIPT, comment)
        places = {f"{script}:{line} <module>", f"{script}:{line + 1} <module>"}
        named = sum(f["lost_us"] for f in report["findings"]
                    if f["kind"] == "host_tracing" and places & set(f["stack"]))
        assert named > 0.6 * held_s * 1e6, (comment, held_s, [(f["kind"], f["stack"], f["lost_us"])
                                                               for f in report["findings"]], seen)


def _what_the_capture_held(analysis, result: dict) -> dict:
    """What a failure shows: the script's own timings, the window, the device's busy extent and the
    main thread's sampled runs (start, us, CPU us, line)."""
    (worker,) = analysis.workers
    stacks = worker.host.stacks
    main = [i for i in range(len(stacks.start)) if stacks.thread_names.get(int(stacks.line[i])) == "MainThread"]
    runs = [(round(stacks.start[i]), round(stacks.end[i] - stacks.start[i]), round(float(stacks.cpu_us[i])),
             stacks.stacks[stacks.stack[i]].source) for i in main]
    busy = [(round(d.busy_starts[0]), round(d.busy_ends[-1]), d.busy_starts.size) for d in worker.devices
            if d.busy_starts.size]
    return {"script": result, "window": worker.window, "busy": busy, "runs": runs}


OWN_THREADS_SCRIPT = textwrap.dedent('''
    import json, sys, threading, time, torch, torch_xla, xlaprof
    from collectors import metrics_sampler, stack_sampler
    callers = []
    reconcile = stack_sampler._reconcile

    def spy():
        callers.append(threading.current_thread().name)
        reconcile()

    stack_sampler._reconcile = spy
    (torch.ones(8, device=torch_xla.device()) * 2).sum().item()
    with xlaprof.profile(sys.argv[1]) as run:
        ready = [emitter.ready.is_set() for emitter in list(stack_sampler._emitters.values())]
        main_emitter = stack_sampler._emitters[threading.main_thread()]
        first = len(callers)
        time.sleep(0.2)
        late = threading.Thread(target=time.sleep, args=(0.5,), name="late")
        late.start()
        let_go = threading.Event()  # a thread whose emitter ends while the others sample
        short = threading.Thread(target=let_go.wait, name="short")
        short.start()
        deadline = time.monotonic() + 5
        while short not in stack_sampler._emitters and time.monotonic() < deadline:
            time.sleep(0.01)
        short_sampled, steady = short in stack_sampler._emitters, len(callers)
        let_go.set()
        short.join()
        for _ in range(10):  # a thread being started is listed with its starter's ident until it runs
            brief = threading.Thread(target=int)
            brief.start()
            brief.join()
        time.sleep(0.3)
        during, after_short = callers[first:], callers[steady:]
        threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("xlaprof"))
        kept = stack_sampler._emitters.get(threading.main_thread()) is main_emitter
    metrics_line = stack_sampler.host_line_id(metrics_sampler._sampler.ident)
    print(json.dumps({"path": run.path, "ready": ready, "during": during, "threads": threads, "kept": kept,
                      "metrics_line": metrics_line, "short_sampled": short_sampled,
                      "after_short": after_short}))
''')


def test_xlaprofs_own_threads_keep_off_the_gil_while_emitters_sample(tmp_path):
    """While a capture records, the controller thread wakes at most once (the emitters look for new
    threads from their own loop, which has the GIL already: a thread started mid-capture is found;
    and an emitter that ends while others sample lets it sleep: a thread that lived a moment, its
    emitter ending with it, woke it in 1 run of 5),
    the metrics thread not at all (the emitters take the periodic snapshots: waking in a long C call
    that kept the GIL, it took the GIL first as the call returned, and the call was named at a later
    line), the capture's start returns once its emitters sample, and the main thread's emitter lasts
    through threads it starts (it took the starting thread for an ended one, in 1 run of 3)."""
    result = _script_process(tmp_path, "own.py", OWN_THREADS_SCRIPT)
    run = json.loads(result.stdout.strip().splitlines()[-1])
    assert run["ready"] == [True] and run["short_sampled"]
    assert run["during"].count("xlaprof-stacks") <= 1, run["during"]
    assert "xlaprof-stacks" not in run["after_short"], run["after_short"]
    assert "xlaprof-stack MainThread" in run["during"], run["during"]
    assert "xlaprof-stack late" in run["threads"], run["threads"]
    assert run["kept"]
    plane = Session.load(run["path"]).workers[0].space.plane(vocabulary.HOST_PLANE)
    snapshot_lines = collections.Counter(plane.lines[plane.events.line[r]] for r in
                                         plane.rows_named({vocabulary.METRICS_EVENT}))
    by_emitters = sum(n for line, n in snapshot_lines.items() if line.name.startswith(vocabulary.STACK_LINE_PREFIX))
    assert by_emitters >= 1, snapshot_lines  # a 0.5 s capture, a snapshot every 0.25 s, by any emitter
    assert not any(line.id == run["metrics_line"] for line in snapshot_lines), snapshot_lines


IDLE_SCRIPT = textwrap.dedent('''
    import json, logging, sys, threading, time, torch, torch_xla, xlaprof
    from collectors import stack_runs
    logging.basicConfig()

    def xlaprof_threads():
        return sorted(t.name for t in threading.enumerate() if t.name.startswith("xlaprof"))

    def unreadable():  # the sampler fails to read this function's frames
        time.sleep(0.3)

    def readable():
        time.sleep(0.3)

    texts = stack_runs._texts_of
    stack_runs._texts_of = lambda code: texts(code) if code.co_name != "unreadable" else 1 / 0
    switch = sys.getswitchinterval()
    xlaprof.start_server(0)
    x = torch.randn(8, 8, device=torch_xla.device())
    for i in range(20):
        (x * i).sum().item()
    time.sleep(0.3)
    idle = {"threads": xlaprof_threads(), "switch": sys.getswitchinterval() == switch}
    with xlaprof.profile(sys.argv[1]) as run:
        unreadable()
        readable()
        unreadable()
        recording = {"threads": xlaprof_threads(), "switch": sys.getswitchinterval()}
    time.sleep(0.3)
    after = {"threads": xlaprof_threads(), "switch": sys.getswitchinterval() == switch}
    print(json.dumps({"path": run.path, "idle": idle, "recording": recording, "after": after}))
''')


def test_nothing_samples_while_no_capture_records_and_an_unreadable_sample_is_skipped(tmp_path):
    result = _script_process(tmp_path, "idle.py", IDLE_SCRIPT)
    script = tmp_path / "idle.py"
    run = json.loads(result.stdout.strip().splitlines()[-1])
    assert run["idle"] == {"threads": ["xlaprof-metrics", "xlaprof-stacks"], "switch": True}
    assert run["recording"] == {"threads": ["xlaprof-metrics", "xlaprof-stack MainThread", "xlaprof-stacks"],
                                "switch": 0.001}
    assert run["after"] == run["idle"]
    assert result.stderr.count("skipped a sample it could not read") == 1
    samples = samples_of(Session.load(run["path"]).workers[0].space.plane(vocabulary.HOST_PLANE))
    assert not any("unreadable" in s.stack for s in samples)
    assert any(s.stack.endswith(f"{script}:{_lines_of(IDLE_SCRIPT, 'def readable') + 1} readable") for s in samples)


KEPT_LOCALS_SCRIPT = textwrap.dedent('''
    import json, sys, time, torch, torch_xla, xlaprof
    import torch_xla.debug.metrics as met
    from collectors import stack_runs
    read = stack_runs.StackReader.read

    def slow_read(self, *args, **kwargs):  # an emitter kept from its core midway (a busy host): the GIL goes
        time.sleep(0.005)
        return read(self, *args, **kwargs)

    stack_runs.StackReader.read = slow_read
    dev = torch_xla.device()
    x = torch.randn(64, 64, device=dev)

    def step():
        hidden = torch.tanh(x @ x)  # a local the step's graph does not output
        for _ in range(20):
            hidden = torch.tanh(hidden @ x)
        return (hidden * 2).sum()

    for _ in range(3):
        step()
        torch_xla.sync()
    before = met.counter_value("UncachedCompile")
    with xlaprof.profile(sys.argv[1]) as run:
        for _ in range(150):
            step()
            torch_xla.sync()
    print(json.dumps({"path": run.path, "compiles": met.counter_value("UncachedCompile") - before}))
''')


def test_sampling_never_keeps_a_functions_tensors_alive_into_the_next_sync(tmp_path):
    """The sampler holds code objects and lines, never a frame: an emitter that held the frame of a
    function its thread then left (its GIL gone midway, as on a busy host) kept that function's
    tensors alive through the thread's sync, which compiled a new graph with them as outputs (a pod
    worker compiled 1.4 s twice in a 3 s capture, in 1 of 5 captures beside a busy process)."""
    run = _run_script(tmp_path, "kept.py", KEPT_LOCALS_SCRIPT)
    assert run["compiles"] == 0, run


FAILED_START_SCRIPT = textwrap.dedent('''
    import json, logging, sys, threading, time, torch, torch_xla, xlaprof
    from collectors import metrics_sampler, stack_sampler
    logging.basicConfig()
    stop = threading.Event()
    cursed = threading.Thread(target=stop.wait, name="cursed", daemon=True)
    cursed.start()
    line_id, tries = stack_sampler.host_line_id, []

    def refusing(ident):  # the emitter of "cursed" fails as it starts
        if ident == cursed.ident:
            tries.append(ident)
            raise OSError("no line id")
        return line_id(ident)

    stack_sampler.host_line_id = refusing
    switch = sys.getswitchinterval()
    (torch.ones(8, device=torch_xla.device()) * 2).sum().item()
    with xlaprof.profile(sys.argv[1]) as run:
        time.sleep(0.8)
    time.sleep(0.3)
    after = {"threads": sorted(t.name for t in threading.enumerate() if t.name.startswith("xlaprof")),
             "switch": sys.getswitchinterval() == switch, "emitters": len(stack_sampler._emitters),
             "metrics_thread_wakes": metrics_sampler._own_thread_may_wake.is_set()}
    stop.set()
    print(json.dumps({"path": run.path, "tries": len(tries), "after": after}))
''')


def test_a_thread_whose_emitter_cannot_start_gets_no_other_and_the_rest_samples_on(tmp_path):
    """An emitter that fails as it starts is said once and not started again while the recording
    lasts (the other emitters looked for threads every 50 ms and started a new one each time); the
    other threads are sampled and take the metric snapshots, and once the recording ends the
    sampler stops as usual (the controller, asleep while emitters run, is woken by the failure)."""
    result = _script_process(tmp_path, "failed.py", FAILED_START_SCRIPT)
    run = json.loads(result.stdout.strip().splitlines()[-1])
    assert run["tries"] == 1, run
    assert result.stderr.count("cannot sample thread 'cursed'") == 1, result.stderr
    assert run["after"] == {"threads": ["xlaprof-metrics", "xlaprof-stacks"], "switch": True, "emitters": 0,
                            "metrics_thread_wakes": True}
    plane = Session.load(run["path"]).workers[0].space.plane(vocabulary.HOST_PLANE)
    assert {s.thread_name for s in samples_of(plane)} == {"MainThread"}
    by_emitter = [r for r in plane.rows_named({vocabulary.METRICS_EVENT})
                  if plane.lines[plane.events.line[r]].name == "py MainThread"]
    assert len(by_emitter) >= 2, by_emitter  # a 0.8 s capture, a snapshot every 0.25 s


UNBUILT_SCRIPT = textwrap.dedent('''
    import json, logging, sys
    sys.modules["collectors._stack_watch"] = None  # as installed where no C compiler was
    import torch, torch_xla, xlaprof
    logging.basicConfig()
    x = torch.randn(8, 8, device=torch_xla.device())
    paths = []
    for capture in range(2):
        with xlaprof.profile(sys.argv[1]) as run:
            for i in range(20):
                (x * i).sum().item()
        paths.append(run.path)
    print(json.dumps({"paths": paths}))
''')


def test_a_worker_without_the_c_loop_captures_without_stacks_says_so_once_and_the_report_says_why(tmp_path):
    result = _script_process(tmp_path, "unbuilt.py", UNBUILT_SCRIPT)
    assert result.stderr.count("the stack sampler's C loop is not built") == 1
    paths = json.loads(result.stdout.strip().splitlines()[-1])["paths"]
    for path in paths:
        assert samples_of(Session.load(path).workers[0].space.plane(vocabulary.HOST_PLANE)) == []
    report = run_cli("analyze", "--json", paths[-1])
    assert report.returncode == 0, report.stderr
    (note,) = [n for n in json.loads(report.stdout)["notes"] if n.startswith("no Python stacks")]
    assert "installed without a C compiler" in note
