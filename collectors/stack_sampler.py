"""Put the Python stacks of the worker's threads into the profile while a capture records.

Contract (names in ``xlaprof.xspace.vocabulary``; the flow of a capture in docs/ARCHITECTURE.md):
- ``ensure_sampler()`` starts (once per process) the controller thread ``xlaprof-stacks``. Every
  ``POLL_S`` it checks whether a capture records (the metrics sampler's test); while one does
  and the rate is not 0, every Python thread but xlaprof's own (names starting "xlaprof"), up to
  ``MAX_THREADS``, gets one emitter thread. Nothing else runs while no capture records. While
  emitters run, they look for new threads every ``POLL_S`` themselves, in their loop, which holds
  the GIL then, and the controller sleeps until the last emitter ends (an emitter that ends forgets
  itself, and the last one wakes it; a thread that lives a moment, started mid-capture, may get an
  emitter that ends with it, and the controller sleeps on): a controller waking in a long C call
  that keeps the GIL (gc.collect()) often took the GIL before the emitter as the call returned, and
  the emitter then read the thread's stack lines later. A thread whose emitter could not start gets no other one until the
  recording ends.
- An emitter names its OS thread "py <thread name>" (so its TraceMe events form their own host
  line) and samples its thread's stack (code objects and lines: never a tensor, nor a frame) about ``rate`` times a
  second, with a jittered sleep and a back-off while waking up is late. The sampling loop is C
  (``collectors/_stack_watch.c``): a sample of a thread that did not run costs it nothing, one
  whose stack did not change (same code objects at the same lines) a GIL hand-off and no Python;
  the stack is read in Python (only its changed frames formatted) when it changed, or every
  ``REFRESH_S``. The main thread's loop trips instead (``Watcher(..., trips=True)``): the thread
  samples itself in a pending call, in C, with no hand-off, so Python run between short calls that
  let go of the GIL (which starve a thread waiting for it) is sampled where it runs (another
  thread's loop asks that thread to let the GIL go, where it holds it, before taking it); the emitter
  takes the samples in batches every ``DRAIN_S`` (a thread in a C call or blocked runs the call on
  its return, stamped as of the ask), and reads the stack itself then; ``flush()`` interrupts that
  wait. Every emitter looks its stacks up among those formatted before (``read_stacks()``), so a
  known stack costs no (code, line) pairs, and takes a batch whole before its periodic checks
  (recording, new threads, metric snapshots). It records one TraceMe event per
  run of identical stacks (``stack_runs``), named
  after the innermost frame, with the stats py_thread (the host line id of the sampled thread),
  py_thread_name, py_lag_us (how long after the C loop read the stack the event opened: the emitter
  may wait for the GIL or a core, and takes the main thread's samples up to ``DRAIN_S`` late) and py_stack, and, as it closes, py_cpu_us: the time the thread
  was on a CPU or runnable during the run (running Python, or wanting to while a loaded host gave
  its core to another thread), against being blocked on the run's line (a sleep, a queue, a read),
  and for the main thread py_seen_blocked_us, the time its asks found it blocked in a call of the
  run's stack (answered late, off the CPUs), where they did. It ends,
  closing its open event, when its thread ends, when recording stops, or at ``flush()`` (within
  ``REFRESH_S``, the main thread's at once; the main thread's emitter records the samples its loop queued first, while the
  capture records: a capture that stops by itself loses those of its last ``DRAIN_S``).
- A sample that fails is skipped and logged once per process; an emitter never raises. Where the C
  loop was not built (no C compiler at install), the sampler says so once and samples nothing.
- At the interpreter's exit (``atexit``) it flushes: the emitters end, and the main thread's
  tripping thread with them, before the interpreter is torn down.
- ``set_rate(hz)`` sets the sampling rate of the coming captures (``check_rate`` validates it);
  ``flush()`` closes every open event and pauses sampling until the next ``resume()`` or the
  end of the recording, so a capture stopped right after loses nothing (``xlaprof.profile``);
  ``resume()`` starts the emitters at once when a capture records, and returns once they sample.
- ``gil_held_ns(ident)``: how long (ns) the emitters that sampled the thread ``ident`` held the GIL
  so far in this process (the C loop's ``held_ns``, those of ended emitters kept): the time that
  thread, where it wanted to run Python meanwhile, waited for the sampler.
- While emitters run, the interpreter's switch interval is ``SWITCH_INTERVAL_S`` (so an emitter
  gets the GIL promptly from a thread running Python), restored when they end; and they take the
  metric snapshots (``metrics_sampler.emit_if_due``) while the metrics thread sleeps, so that no
  thread of xlaprof's wakes for the GIL while they sample.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import logging
import sys
import threading
import time

from collectors import metrics_sampler, torch_xla_import
from collectors.stack_runs import RunWriter, StackReader, read_stacks, safe_text
from xlaprof.errors import XlaprofError
from xlaprof.xspace import vocabulary

try:
    from collectors._stack_watch import Watcher
except ImportError as _not_built:  # installed where no C compiler was: no stacks, said once at the first capture
    Watcher, _WATCHER_MISSING = None, str(_not_built)

DEFAULT_RATE_HZ = 1000
MAX_RATE_HZ = 10_000  # beyond this the sleep between samples is below the OS timer's resolution
POLL_S = 0.05  # how soon a capture's threads get their emitters
READY_TIMEOUT_S = 1.0  # how long resume() waits for the emitters it starts to sample
MAX_EVENT_S = 0.1  # an event is cut (closed and reopened) at this age: what a stopped capture may lose
REFRESH_S = 0.02  # how often an emitter whose stack does not change checks its event's age and the recording
DRAIN_S = 0.1  # how often the main thread's emitter takes the samples its thread tripped (and checks as above)
MAX_THREADS = 32  # sampled threads per process
SWITCH_INTERVAL_S = 0.001  # the interpreter's switch interval while emitters run
LATE_S = 0.0005  # an emitter waking up later than this after its sleep backs off (busy GIL or cores) ...
MAX_BACKOFF_S = 0.008  # ... doubling its period up to this
OWN_THREAD_PREFIX = "xlaprof"
TRIP_THREAD = "xlaprof-trip"  # the OS name of the main thread's tripping thread (collectors/_stack_watch.c)
_PR_SET_NAME = 15  # prctl option naming the calling thread (Linux)
_LINUX_THREAD_NAME_BYTES = 15
_STD_HASH_SEED = 0xC70F6907  # libstdc++'s std::hash seed (std::_Hash_bytes)

log = logging.getLogger("xlaprof")
_lock = threading.Lock()
_controller: threading.Thread | None = None
_wake = threading.Event()
_rate_hz: float = DEFAULT_RATE_HZ
_paused = False
_emitters: dict[threading.Thread, _Emitter] = {}
_saved_switch_interval: float | None = None
_reconciled_at = 0.0  # time.monotonic() of the last _reconcile()
_held_by_ended: dict[int, int] = {}  # sampled thread's ident -> ns its ended emitters held the GIL
_warned: set[str] = set()


def _warn_once(key: str, message: str, *args) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message, *args)


def check_rate(stack_hz) -> float:
    """``stack_hz`` as a rate in samples per second, or ``XlaprofError`` in one line."""
    if isinstance(stack_hz, bool) or not isinstance(stack_hz, (int, float)) or not 0 <= stack_hz <= MAX_RATE_HZ:
        raise XlaprofError(f"stack_hz={stack_hz!r}: give the Python stack sampling rate in samples per second, "
                           f"from 0 (off) to {MAX_RATE_HZ}")
    return float(stack_hz)


def rate() -> float:
    """The sampling rate of the coming captures (0: no Python stacks)."""
    return _rate_hz


def set_rate(stack_hz: float) -> float:
    """Sample at ``stack_hz`` from the next capture on; returns the previous rate."""
    global _rate_hz
    with _lock:
        previous, _rate_hz = _rate_hz, check_rate(stack_hz)
    return previous


@functools.cache
def _std_hash_bytes():
    function = ctypes.CDLL("libstdc++.so.6")._ZSt11_Hash_bytesPKvmm
    function.restype = ctypes.c_size_t
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    return function


def host_line_id(ident: int) -> int:
    """The id of the host-plane line holding the TraceMe events of the thread ``ident``
    (``threading.get_ident()``, its pthread_t): tsl's thread id, libstdc++'s
    ``std::hash<std::thread::id>``, as the signed 64-bit XLine id."""
    pthread = ctypes.c_ulong(ident)
    value = _std_hash_bytes()(ctypes.byref(pthread), ctypes.sizeof(pthread), _STD_HASH_SEED)
    return value - (1 << 64) if value >= 1 << 63 else value


def _name_this_os_thread(name: str) -> None:
    raw = name.encode()[:_LINUX_THREAD_NAME_BYTES].decode(errors="ignore").encode()
    if ctypes.CDLL(None).prctl(_PR_SET_NAME, raw, 0, 0, 0) != 0:
        _warn_once("name", "xlaprof: could not name the stack sampler's thread %r; its line keeps another name", name)


class _Emitter(threading.Thread):
    """Samples one thread's stack into TraceMe events while a capture records."""

    def __init__(self, target: threading.Thread, rate_hz: float) -> None:
        super().__init__(name=f"{OWN_THREAD_PREFIX}-stack {target.name}", daemon=True)
        self.target = target
        self.period_s = 1.0 / rate_hz
        self.running = True
        self.failed = False  # it could not start: its thread gets no other emitter while the recording lasts
        self.trips = target is threading.main_thread()  # its loop trips the thread, and waits DRAIN_S at a time
        self.ready = threading.Event()  # set as it begins sampling (or gives up)
        self.watcher = None  # its C loop, once it began

    def run(self) -> None:
        target = self.target
        try:
            _name_this_os_thread(vocabulary.STACK_LINE_PREFIX + target.name)
            profiler = torch_xla_import.profiler()
            stats = {vocabulary.PY_THREAD_STAT: host_line_id(target.ident),
                     vocabulary.PY_THREAD_NAME_STAT: safe_text(target.name).strip() or "?"}

            def open_event(stack, lag_us):  # py_stack last: an unbalanced bracket in it cannot swallow another stat
                return profiler.TraceMe(stack.label, **stats, **{vocabulary.PY_LAG_STAT: round(lag_us),
                                                                 vocabulary.PY_STACK_STAT: stack.text})

            writer = RunWriter(open_event, MAX_EVENT_S)
            watcher = self.watcher = Watcher(target.ident, target.native_id, self.period_s, LATE_S,
                                             max(MAX_BACKOFF_S, self.period_s),
                                             trips=self.trips)
        except Exception as exc:  # a sampler must never take the worker down
            _warn_once("start", "xlaprof: the stack sampler cannot sample thread %r: %s", target.name, exc)
            self.failed = True
            self.ready.set()
            _wake.set()  # the controller polls again while no emitter runs
            return
        self.ready.set()
        try:
            self._sample(profiler.TraceMe.is_enabled, watcher, writer)
        finally:
            writer.close()
            watcher.close()
            with _lock:
                _held_by_ended[target.ident] = _held_by_ended.get(target.ident, 0) + watcher.held_ns
                if _emitters.get(target) is self:
                    del _emitters[target]
                last = not _any_emitter_alive()
            if last:  # the controller restores the switch interval and polls again; the others forget this one
                _wake.set()

    def _sample(self, recording, watcher, writer: RunWriter) -> None:
        target, reader, known = self.target, StackReader(), read_stacks()
        timeout_s = DRAIN_S if self.trips else REFRESH_S
        while self.running and recording(vocabulary.USER_SPAN_LEVEL):
            # (code, line) pairs, never a frame (which keeps its locals alive), or a known stack's entry
            frames = watcher.wait(timeout_s, known)
            if frames is None or not target.is_alive():
                return
            reader = _record(frames, watcher, reader, writer)
            while watcher.queued:  # the rest of the tripped batch: the checks below once a batch
                reader = _record(watcher.wait(0.0, known), watcher, reader, writer)
            if time.monotonic() - _reconciled_at >= POLL_S:  # new threads: from here, which has the GIL now
                _reconcile_safely()
            metrics_sampler.emit_if_due()  # likewise: the metrics thread sleeps while emitters run
        while watcher.queued and recording(vocabulary.USER_SPAN_LEVEL):  # a flush keeps the tripped samples
            reader = _record(watcher.wait(0.0, known), watcher, reader, writer)


def _record(frames, watcher, reader: StackReader, writer: RunWriter) -> StackReader:
    """The sample ``watcher.wait`` returned (``frames``) as the writer's next sample; returns the reader
    for the next one (a new one where this one could not be read: the next is read whole)."""
    try:
        stack = reader.read(frames, watcher.depth - watcher.kept, watcher.kept, watcher.key)
    except Exception as exc:  # a frame it cannot read: skip the sample
        _warn_once("read", "xlaprof: the stack sampler skipped a sample it could not read: %r", exc)
        return StackReader()
    lag_us = max(0, time.monotonic_ns() - watcher.sampled_ns) / 1000
    writer.sample(time.perf_counter(), stack, watcher.wanted_ns, lag_us, watcher.seen_blocked_ns)
    return reader


def gil_held_ns(ident: int) -> int:
    """How long (ns) the emitters that sampled the thread ``ident`` (``threading.get_ident()``) held
    the GIL so far in this process."""
    with _lock:
        running = [e.watcher for t, e in _emitters.items() if t.ident == ident and e.watcher is not None]
        return _held_by_ended.get(ident, 0) + sum(watcher.held_ns for watcher in running)


def _set_switch_interval(sampling: bool) -> None:
    global _saved_switch_interval
    if sampling and _saved_switch_interval is None:
        _saved_switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(SWITCH_INTERVAL_S, _saved_switch_interval))
    elif not sampling and _saved_switch_interval is not None:
        sys.setswitchinterval(_saved_switch_interval)
        _saved_switch_interval = None


def _reconcile() -> None:
    """Start an emitter for each thread that needs one while a capture records; forget ended ones."""
    global _paused, _reconciled_at
    _reconciled_at = time.monotonic()
    recording = torch_xla_import.profiler().TraceMe.is_enabled(vocabulary.USER_SPAN_LEVEL)
    with _lock:
        for thread in [t for t, e in _emitters.items() if not e.is_alive() and not (e.failed and recording)]:
            del _emitters[thread]
        if not recording:
            _paused = False
        sampling = recording and not _paused and _rate_hz > 0
        if sampling and Watcher is None:
            _warn_once("build", "xlaprof: no Python stacks in this capture: the stack sampler's C loop is not "
                                "built (%s); reinstall xlaprof where a C compiler is available", _WATCHER_MISSING)
            sampling = False
        _set_switch_interval(sampling or bool(_emitters))
        if sampling:
            _start_emitters()
        metrics_sampler.emitters_take_snapshots(_any_emitter_alive())


def _any_emitter_alive() -> bool:
    """Whether an emitter runs (``_lock`` held): the last wakes the controller as it ends, and they take
    the metric snapshots meanwhile."""
    return any(emitter.is_alive() for emitter in _emitters.values())


def _start_emitters() -> None:
    """An emitter for each thread that has none (``_lock`` held)."""
    for thread in threading.enumerate():
        if thread.name.startswith(OWN_THREAD_PREFIX) or thread in _emitters or thread.ident is None:
            continue
        if len(_emitters) >= MAX_THREADS:
            _warn_once("cap", "xlaprof: sampling the stacks of %d threads only", MAX_THREADS)
            break
        emitter = _emitters[thread] = _Emitter(thread, _rate_hz)
        emitter.start()


def _reconcile_safely() -> None:
    try:
        _reconcile()
    except Exception as exc:  # a sampler must never take the worker down
        _warn_once("controller", "xlaprof: the stack sampler failed: %s", exc)


def _run() -> None:
    while True:
        with _lock:
            sampling = _any_emitter_alive()
        _wake.wait(None if sampling else POLL_S)  # the last emitter wakes the controller as it ends
        _wake.clear()
        _reconcile_safely()


def ensure_sampler() -> None:
    global _controller
    with _lock:
        if _controller is not None and _controller.is_alive():
            return
        _controller = threading.Thread(target=_run, name=f"{OWN_THREAD_PREFIX}-stacks", daemon=True)
        _controller.start()
        atexit.register(flush)  # the main thread's tripping thread (C, no GIL) must not outlive the interpreter


def flush(timeout_s: float = 1.0) -> None:
    """Close every open stack event now and sample no more until ``resume()`` or the recording ends."""
    global _paused
    with _lock:
        _paused = True
        emitters = list(_emitters.values())
        for emitter in emitters:
            emitter.running = False
            if emitter.watcher is not None:
                emitter.watcher.interrupt()  # the main thread's emitter waits DRAIN_S at a time
    deadline = time.monotonic() + timeout_s
    for emitter in emitters:
        emitter.join(max(0.0, deadline - time.monotonic()))


def resume() -> None:
    """Sample again, starting the emitters now if a capture records; returns once they sample (within
    ``READY_TIMEOUT_S``), so the caller's next line is sampled, not the emitters' start-up, which
    needs the GIL its thread may keep (a ``gc.collect()`` first thing in the window)."""
    global _paused
    with _lock:
        _paused = False
    _reconcile()
    _wake.set()  # the controller checks now, then sleeps while the emitters run
    with _lock:
        emitters = list(_emitters.values())
    deadline = time.monotonic() + READY_TIMEOUT_S
    for emitter in emitters:
        emitter.ready.wait(max(0.0, deadline - time.monotonic()))
