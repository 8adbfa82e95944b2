"""Put torch_xla metric snapshots into the profile while a capture records.

Contract: ``ensure_sampler()`` starts (once per process) a daemon thread that checks every
``POLL_S`` whether a capture is recording, and while one is, emits an ``xlaprof.metrics`` event
right away and then every ``INTERVAL_S``, carrying as stats every torch_xla counter
(``<name>``), every metric's sample count and total (``<name>.count``, ``<name>.total``) and
the worker's facts (torch_xla version, PT_XLA_DEBUG_FILE, pid, ordinal). The analysis reads the
first and last snapshots of a capture (``xlaprof.worker_metrics``), so a capture's manifest can
say what happened in its window. Reading counters touches host memory only: no device sync.
- While the stack sampler's emitters run (``emitters_take_snapshots(True)``), they take the periodic
  snapshots from their own loop (``emit_if_due()``), which holds the GIL already, and this module's
  thread sleeps until they end: waking for the GIL during a long C call that keeps it (gc.collect()),
  it took the GIL first as the call returned, and the sampled thread ran on before its emitter read
  its stack, so the call's time was named at a later line.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time

from collectors import torch_xla_import
from xlaprof.xspace import vocabulary

POLL_S = 0.05  # how soon a new capture gets its first snapshot
INTERVAL_S = 0.25  # snapshot period while recording
# TraceMe metadata is encoded as "name#key=value,...#": keys must not contain these.
_UNSAFE_KEY = re.compile(r"[#,=]")

_lock = threading.Lock()
_sampler: threading.Thread | None = None
_ordinal: int | None = None
_due_at = 0.0  # time.monotonic() at which the next periodic snapshot is due
_own_thread_may_wake = threading.Event()  # clear while the emitters take the snapshots
_own_thread_may_wake.set()
log = logging.getLogger("xlaprof")


def snapshot() -> dict[str, object]:
    """The worker's counters, metric totals and facts, as TraceMe-safe stats."""
    met = torch_xla_import.metrics()
    stats: dict[str, object] = {}
    for name in met.counter_names():
        stats[name] = int(met.counter_value(name) or 0)
    for name in met.metric_names():
        data = met.metric_data(name)
        if data:
            stats[f"{name}.count"] = int(data[0])
            stats[f"{name}.total"] = float(data[1])
    stats = {k: v for k, v in stats.items() if not _UNSAFE_KEY.search(k)}
    stats[vocabulary.FACT_TORCH_XLA_VERSION] = torch_xla_import.version()
    stats[vocabulary.FACT_PID] = os.getpid()
    if _ordinal is not None:
        stats[vocabulary.FACT_ORDINAL] = _ordinal
    debug_file = os.environ.get("PT_XLA_DEBUG_FILE")
    if debug_file and not _UNSAFE_KEY.search(debug_file):
        stats[vocabulary.FACT_DEBUG_FILE] = os.path.abspath(debug_file)
    return stats


def emit() -> None:
    global _due_at
    _due_at = time.monotonic() + INTERVAL_S
    profiler = torch_xla_import.profiler()
    profiler.TraceMe(vocabulary.METRICS_EVENT, **snapshot()).__exit__(None, None, None)


def emit_if_due() -> None:
    """The periodic snapshot, where one is due and ``ensure_sampler()`` was called; never raises (a
    sampler must never take the worker down)."""
    global _due_at
    if time.monotonic() < _due_at:  # the emitters' loop calls this at every sample: no lock until one is due
        return
    with _lock:
        now = time.monotonic()
        if _sampler is None or now < _due_at:
            return
        _due_at = now + INTERVAL_S
    try:
        emit()
    except Exception as exc:
        log.warning("metrics snapshot failed: %s", exc)


def emitters_take_snapshots(taking: bool) -> None:
    """Whether the stack sampler's emitters take the periodic snapshots (and this module's thread sleeps)."""
    if taking:
        _own_thread_may_wake.clear()
    else:
        _own_thread_may_wake.set()


def _run() -> None:
    profiler = torch_xla_import.profiler()
    recording = False
    while True:
        _own_thread_may_wake.wait()
        time.sleep(INTERVAL_S if recording else POLL_S)
        recording = profiler.TraceMe.is_enabled(vocabulary.USER_SPAN_LEVEL)
        if recording and _own_thread_may_wake.is_set():
            emit_if_due()


def ensure_sampler(ordinal: int | None = None) -> None:
    global _sampler, _ordinal
    with _lock:
        if ordinal is not None:
            _ordinal = ordinal
        if _sampler is not None and _sampler.is_alive():
            return
        _sampler = threading.Thread(target=_run, name="xlaprof-metrics", daemon=True)
        _sampler.start()
