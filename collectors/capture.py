"""The capture client: pull profiles from one or many workers' profiler servers at once.

Contract: ``capture_session(workers, duration_s, logdir, name, attempts)`` asks every worker to
record for ``duration_s`` concurrently (the same window; wall time about the duration, not N
times it) and writes one session (``session_writer``): one ``<host>_<port>.xplane.pb`` per worker
that answered, and the manifest with every worker's status, error, event count and metrics.
- No worker answered: nothing is kept and ``CaptureError`` names each address and how to start
  a server. Some answered: the session is kept, ``CaptureResult.complete`` is False.
- Bounded: a worker that does not answer is asked again up to ``attempts`` times in all,
  ``RETRY_INTERVAL_S`` apart; one that has not answered ``duration_s + ANSWER_GRACE_S`` after the
  start counts as failed.
- Where the profile lands: the profiler *server* writes it, so for remote workers the scratch
  directory is inside the (shared, e.g. ``gs://``) logdir; for local workers a local temp dir.
- It needs no torch: it speaks the profiler protocol through xprof's native client. Its C++
  logging goes to the session's ``capture.log``, not the terminal.
- A capture that gets nothing creates nothing: not the session, nor ``plugins/profile`` of a new logdir.
"""
from __future__ import annotations

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
        raise XlaprofError("no worker to capture: give --host HOST[,HOST...]")
    return workers


def _trace_function():
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except ImportError:
        raise MissingExtraError("xlaprof capture", "xprof", "capture") from None
    return _pywrap_profiler_plugin.trace


def _capture_one(trace, result: WorkerResult, scratch: str, duration_ms: int, attempts: int) -> None:
    started = time.monotonic()
    options = {"host_tracer_level": HOST_TRACER_LEVEL, "device_tracer_level": 1, "python_tracer_level": 0}
    try:
        while True:
            result.attempts += 1
            try:
                trace(result.worker.address, scratch, "", False, duration_ms, 1, options)
                break
            except Exception as exc:
                if result.attempts >= attempts or not _no_answer(exc):
                    raise
                time.sleep(RETRY_INTERVAL_S)
        result.data = _read_scratch(scratch)
        result.status = WorkerStatus.OK
    except Exception as exc:  # each worker's failure is recorded, never raised across threads
        result.status, result.error = WorkerStatus.FAILED, _one_line(exc)
    finally:
        result.seconds = time.monotonic() - started


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
        return "no profiler server answered (is the worker running xlaprof.start_server() on that port?)"
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def capture_session(workers: list[WorkerAddress], *, duration_s: float, logdir: str,
                    name: str | None = None, attempts: int = 3) -> CaptureResult:
    if not duration_s > 0:
        raise XlaprofError(f"--duration must be positive seconds, not {duration_s}")
    if attempts < 1:
        raise XlaprofError("--attempts must be at least 1")
    trace = _trace_function()
    staged = StagedSession(logdir, name)
    results = [WorkerResult(w) for w in workers]
    remote = any(w.host not in LOCAL_HOSTS for w in workers)
    # The profiler server writes the profile: a remote one into the (shared) logdir, in a hidden
    # directory of its own that it creates only if it answers.
    scratch_root = staged.scratch_dir() if remote else tempfile.mkdtemp(prefix="xlaprof-capture-")
    try:
        log = _run_concurrently(trace, results, scratch_root, staged.run, duration_s, attempts)
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
                      attempts: int) -> bytes | None:
    """Capture every worker at once; returns the native client's log (None if it wrote none)."""
    threads = []
    log_path = os.path.join(tempfile.gettempdir(), f"xlaprof-capture-{os.getpid()}-{run}.log")
    with native_output_to(log_path) as terminal:
        for i, result in enumerate(results):
            scratch = storage.join(scratch_root, f"worker{i}")
            thread = threading.Thread(target=_capture_one, daemon=True, name=f"capture-{result.worker.address}",
                                      args=(trace, result, scratch, int(duration_s * 1000), attempts))
            thread.start()
            threads.append(thread)
        _wait_with_progress(threads, results, duration_s, terminal)
    for thread, result in zip(threads, results):
        if thread.is_alive():
            result.status = WorkerStatus.FAILED
            result.error = f"no answer within {duration_s + ANSWER_GRACE_S:.0f} s"
    if not os.path.exists(log_path):
        return None
    with open(log_path, "rb") as handle:
        log = handle.read()
    os.remove(log_path)
    return log


def _wait_with_progress(threads, results, duration_s: float, terminal) -> None:
    """One progress line per worker: recording time, then its state (answered, retrying, failed)."""
    deadline = time.monotonic() + duration_s + ANSWER_GRACE_S
    started = time.monotonic()
    bars = [progress_bar(desc=r.worker.address, total=round(duration_s, 1), unit="s", file=terminal, position=i)
            for i, r in enumerate(results)]
    try:
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(0.1)
            elapsed = round(min(time.monotonic() - started, duration_s), 1)
            for bar, result in zip(bars, results):
                bar.n = duration_s if result.status is WorkerStatus.OK else elapsed
                if result.status is None:
                    bar.set_postfix_str("recording" if result.attempts <= 1 else f"retry {result.attempts}")
                else:
                    bar.set_postfix_str(result.status.value)
    finally:
        for bar in bars:
            bar.close()


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
    worst = "; ".join(f"{r.worker.address}: {r.error}" for r in results)
    port = results[0].worker.port
    return (f"nothing captured: {worst}. Start a server in the training script with "
            f"xlaprof.start_server({port}) and keep it running while you capture")
