"""The capture client: pull profiles from one or many workers' profiler servers at once.

Contract: ``capture_session(workers, duration_s, logdir, name, attempts, max_concurrent)`` asks
the workers to record for ``duration_s``, up to ``max_concurrent`` at once (all of them within
that bound record the same window; wall time about the duration per batch, not N times it), and
writes one session (``session_writer``): one ``<host>_<port>.xplane.pb`` per worker that
answered, and the manifest with every worker's status, error, event count and metrics.
- ``parse_workers("h1,h2:9013", 9012)``; ``hosts_spec("@hosts.txt")`` reads a hosts file (hosts
  separated by commas, spaces or lines; ``#`` starts a comment), else returns the text itself.
- No worker answered: nothing is kept and ``CaptureError`` names each address and how to start
  a server. Some answered: the session is kept, ``CaptureResult.complete`` is False.
- Each failed worker is said by address with its reason: ``BUSY`` (its profiler server is
  serving another capture, which the native client logs: wait, or capture another port),
  ``NO_ANSWER``, or the client's error; the advice to start a server comes only when a worker
  was not busy.
- Bounded: a worker that does not answer is asked again up to ``attempts`` times in all,
  ``RETRY_INTERVAL_S`` apart (a busy one is not asked again); one that has not answered
  ``duration_s + ANSWER_GRACE_S`` after its turn began counts as failed.
- Where the profile lands: the profiler *server* writes it, so for remote workers the scratch
  directory is inside the (shared, e.g. ``gs://``) logdir; for local workers a local temp dir.
- It needs no torch: it speaks the profiler protocol through xprof's native client. Its C++
  logging goes to the session's ``capture.log``, not the terminal.
- A capture that gets nothing creates nothing: not the session, nor ``plugins/profile`` of a new logdir.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from collectors.native_output import native_output_to
from collectors.session_writer import StagedSession
from xlaprof.errors import BadProfileError, CaptureError, MissingExtraError, XlaprofError
from xlaprof.progress import progress_bar
from xlaprof.session import storage
from xlaprof.session.layout import XPLANE_SUFFIX, debug_file_name
from xlaprof.session.manifest import CaptureStatus, WorkerStatus
from xlaprof.xspace import vocabulary
from xlaprof.xspace.metrics import window_metrics

ANSWER_GRACE_S = 30.0  # how long past the window a worker may take to send its profile
MAX_DURATION_S = 86_400.0  # a day: the profiler counts the duration in int32 milliseconds
MAX_CONCURRENT = 16  # workers captured at once by default
MAX_HOSTS_FILE_BYTES = 2**20
BUSY = ("busy: another capture is running on that server (it serves one at a time); wait for it to finish, "
        "or capture another port")
NO_ANSWER = "no profiler server answered (is the worker running xlaprof.start_server() on that port?)"
_BUSY_LOG = "returned INTERNAL: Another profiling session active"  # the native client's log line
RETRY_INTERVAL_S = 1.0  # pause before asking a worker that did not answer again
HOST_TRACER_LEVEL = 2  # TraceMe levels 1-2: torch_xla's runtime events and xlaprof spans
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class WorkerAddress:
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass
class WorkerResult:
    worker: WorkerAddress
    status: WorkerStatus | None = None  # None while the capture is under way
    error: str | None = None
    file: str | None = None
    events: int = 0
    metrics: dict | None = None
    seconds: float = 0.0
    attempts: int = 0
    started: float | None = None  # time.monotonic() when its turn began
    data: bytes | None = field(default=None, repr=False)

    def to_manifest(self) -> dict:
        return {"address": self.worker.address, "host": self.worker.host, "port": self.worker.port,
                "status": self.status.value if self.status else None, "error": self.error, "file": self.file, "events": self.events,
                "metrics": self.metrics, "capture_s": round(self.seconds, 3), "attempts": self.attempts}


@dataclass
class CaptureResult:
    path: str
    workers: list[WorkerResult]

    @property
    def complete(self) -> bool:
        return all(w.status is WorkerStatus.OK for w in self.workers)


def hosts_spec(text: str) -> str:
    """``@FILE``: the hosts listed in FILE, comma-separated; anything else: ``text`` itself."""
    if not text.startswith("@"):
        return text
    path = text[1:]
    try:
        content = storage.read_bytes(path, MAX_HOSTS_FILE_BYTES, "a hosts file is one host per line")
    except FileNotFoundError:
        raise XlaprofError(f"{path}: no such hosts file") from None
    lines = (line.split("#", 1)[0] for line in content.decode(errors="replace").splitlines())
    return ",".join(entry for line in lines for entry in line.replace(",", " ").split())


def parse_workers(hosts: str, default_port: int) -> list[WorkerAddress]:
    """``"h1,h2:9013"`` with default port 9012 -> h1:9012, h2:9013; rejects malformed entries."""
    workers: list[WorkerAddress] = []
    for entry in (e.strip() for e in hosts.split(",")):
        if not entry:
            continue
        host, port = entry, default_port
        if entry.count(":") == 1:
            host, _, port_text = entry.partition(":")
            if not port_text.isdigit():
                raise XlaprofError(f"worker {entry!r}: the port must be a number (host:port)")
            port = int(port_text)
        elif entry.startswith("[") and "]:" in entry:
            host, port_text = entry[1:].split("]:", 1)
            port = int(port_text) if port_text.isdigit() else -1
        if not host or not 0 < port < 65536:
            raise XlaprofError(f"worker {entry!r}: expected host or host:port with a port from 1 to 65535")
        if WorkerAddress(host, port) not in workers:
            workers.append(WorkerAddress(host, port))
    if not workers:
        raise XlaprofError("no worker to capture: give --hosts HOST[,HOST...] or --hosts @FILE")
    return workers


def _trace_function():
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except ImportError:
        raise MissingExtraError("xlaprof capture", "xprof", "capture") from None
    return _pywrap_profiler_plugin.trace


def _capture_one(trace, result: WorkerResult, scratch: str, duration_ms: int, attempts: int,
                 turn: threading.Semaphore, log_path: str) -> None:
    options = {"host_tracer_level": HOST_TRACER_LEVEL, "device_tracer_level": 1, "python_tracer_level": 0}
    with turn:
        started = result.started = time.monotonic()
        try:
            while True:
                result.attempts += 1
                busy_before = _busy_lines(log_path, result.worker)
                try:
                    trace(result.worker.address, scratch, "", False, duration_ms, 1, options)
                    break
                except Exception as exc:
                    if _busy_lines(log_path, result.worker) > busy_before:
                        raise CaptureError(BUSY) from None
                    if result.attempts >= attempts or not _no_answer(exc):
                        raise
                    time.sleep(RETRY_INTERVAL_S)
            result.data = _read_scratch(scratch)
            result.status = WorkerStatus.OK
        except Exception as exc:  # each worker's failure is recorded, never raised across threads
            result.status, result.error = WorkerStatus.FAILED, _one_line(exc)
        finally:
            result.seconds = time.monotonic() - started


def _busy_lines(log_path: str, worker: WorkerAddress) -> int:
    """How often the native client has logged so far that ``worker`` was serving another capture."""
    try:
        with open(log_path, "rb") as handle:
            return handle.read().decode(errors="replace").count(f"{worker.address} {_BUSY_LOG}")
    except OSError:
        return 0


def _read_scratch(scratch: str) -> bytes:
    found = sorted(f for f in storage.find(scratch) if f.endswith(XPLANE_SUFFIX))
    if not found:
        raise CaptureError("the worker answered but sent no profile")
    return storage.read_bytes(found[-1])


def _no_answer(exc: Exception) -> bool:
    text = str(exc)
    return "UNAVAILABLE" in text or "No trace event was collected" in text


def _one_line(exc: Exception) -> str:
    if _no_answer(exc):
        return NO_ANSWER
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def capture_session(workers: list[WorkerAddress], *, duration_s: float, logdir: str,
                    name: str | None = None, attempts: int = 3, max_concurrent: int = MAX_CONCURRENT) -> CaptureResult:
    if not 0 < duration_s <= MAX_DURATION_S:  # nan and inf too (inf was an OverflowError)
        raise XlaprofError(f"--duration must be positive seconds, at most {MAX_DURATION_S:g}, not {duration_s}")
    if attempts < 1:
        raise XlaprofError("--attempts must be at least 1")
    if max_concurrent < 1:
        raise XlaprofError("--max-concurrent must be at least 1")
    trace = _trace_function()
    staged = StagedSession(logdir, name)
    results = [WorkerResult(w) for w in workers]
    remote = any(w.host not in LOCAL_HOSTS for w in workers)
    # The profiler server writes the profile: a remote one into the (shared) logdir, in a hidden
    # directory of its own that it creates only if it answers.
    scratch_root = staged.scratch_dir() if remote else tempfile.mkdtemp(prefix="xlaprof-capture-")
    try:
        log = _run_concurrently(trace, results, scratch_root, staged.run, duration_s, attempts, max_concurrent)
        _keep_captures(staged, results)
        storage.remove_tree(scratch_root)
        if not any(r.status is WorkerStatus.OK for r in results):
            raise CaptureError(_nothing_captured(results))  # nothing was written: the logdir is untouched
        if log is not None:
            staged.add_file("capture.log", log)
        complete = all(r.status is WorkerStatus.OK for r in results)
        path = staged.commit({"kind": "capture", "duration_s": duration_s,
                              "status": (CaptureStatus.COMPLETE if complete else CaptureStatus.PARTIAL).value,
                              "workers": [r.to_manifest() for r in results]})
    except BaseException:
        staged.discard()
        storage.remove_tree(scratch_root)
        raise
    for r in results:
        if r.status is not WorkerStatus.OK:
            print(f"xlaprof: worker {r.worker.address} failed: {r.error}", file=sys.stderr)
    return CaptureResult(path, results)


def _run_concurrently(trace, results: list[WorkerResult], scratch_root: str, run: str, duration_s: float,
                      attempts: int, max_concurrent: int) -> bytes | None:
    """Capture the workers, ``max_concurrent`` at once; returns the native client's log (None if
    it wrote none). The log file is removed whatever happens."""
    threads = []
    log_path = os.path.join(tempfile.gettempdir(), f"xlaprof-capture-{os.getpid()}-{run}.log")
    turn = threading.Semaphore(max_concurrent)
    try:
        with native_output_to(log_path) as terminal:
            for i, result in enumerate(results):
                scratch = storage.join(scratch_root, f"worker{i}")
                thread = threading.Thread(target=_capture_one, daemon=True, name=f"capture-{result.worker.address}",
                                          args=(trace, result, scratch, int(duration_s * 1000), attempts, turn,
                                                log_path))
                thread.start()
                threads.append(thread)
            _wait_with_progress(threads, results, duration_s, max_concurrent, terminal)
        for thread, result in zip(threads, results):
            if thread.is_alive():
                result.status = WorkerStatus.FAILED
                result.error = (f"no answer within {duration_s + ANSWER_GRACE_S:.0f} s" if result.started
                                else "not captured: every turn was held by workers that did not answer")
        if not os.path.exists(log_path):
            return None
        with open(log_path, "rb") as handle:
            return handle.read()
    finally:
        with contextlib.suppress(OSError):
            os.remove(log_path)


def _wait_with_progress(threads, results, duration_s: float, max_concurrent: int, terminal) -> None:
    """One progress line per worker: recording time, then its state (waiting for its turn,
    answered, retrying, failed). Each worker has ``duration_s + ANSWER_GRACE_S`` from its turn."""
    allowed = duration_s + ANSWER_GRACE_S
    turns = -(-len(results) // max_concurrent)
    deadline = time.monotonic() + turns * allowed  # a worker that never returns holds its turn
    bars = [progress_bar(desc=r.worker.address, total=round(duration_s, 1), unit="s", file=terminal, position=i)
            for i, r in enumerate(results)]
    try:
        while (any(t.is_alive() and not _overdue(r, allowed) for t, r in zip(threads, results))
               and time.monotonic() < deadline):
            time.sleep(0.1)
            for bar, result in zip(bars, results):
                elapsed = round(min(time.monotonic() - result.started, duration_s), 1) if result.started else 0.0
                bar.n = duration_s if result.status is WorkerStatus.OK else elapsed
                if result.status is None:
                    bar.set_postfix_str("waiting" if not result.started else
                                        "recording" if result.attempts <= 1 else f"retry {result.attempts}")
                else:
                    bar.set_postfix_str(result.status.value)
    finally:
        for bar in bars:
            bar.close()


def _overdue(result: WorkerResult, allowed_s: float) -> bool:
    return result.started is not None and time.monotonic() - result.started > allowed_s


def _keep_captures(staged: StagedSession, results: list[WorkerResult]) -> None:
    for result in results:
        if result.status is not WorkerStatus.OK:
            continue
        try:
            result.file, space = staged.add_capture(result.worker.host, result.worker.port, result.data)
        except BadProfileError as exc:
            result.status, result.error = WorkerStatus.FAILED, f"unreadable profile: {exc}"
            continue
        finally:
            result.data = None
        result.events = space.event_count
        metrics = window_metrics(space.plane(vocabulary.HOST_PLANE))
        result.metrics = metrics.to_json() if metrics else None
        _copy_debug_file(staged, result)


def _copy_debug_file(staged: StagedSession, result: WorkerResult) -> None:
    """Keep the worker's PT_XLA_DEBUG_FILE beside its capture, where this machine can read it."""
    path = ((result.metrics or {}).get("facts") or {}).get(vocabulary.FACT_DEBUG_FILE)
    if path and os.path.isfile(path) and result.worker.host in LOCAL_HOSTS:
        with open(path, "rb") as handle:
            staged.add_file(debug_file_name(result.file), handle.read())


def _nothing_captured(results: list[WorkerResult]) -> str:
    """Each worker's reason; the advice to start a server only where a worker had none (not busy)."""
    worst = "; ".join(f"{r.worker.address}: {r.error}" for r in results)
    if all(r.error == BUSY for r in results):
        return f"nothing captured: {worst}"
    port = next(r.worker.port for r in results if r.error != BUSY)
    return (f"nothing captured: {worst}. Start a server in the training script with "
            f"xlaprof.start_server({port}) and keep it running while you capture")
