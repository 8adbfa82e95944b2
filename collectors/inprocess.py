"""``xlaprof.profile(logdir)``: capture this process's own profile, for notebooks and scripts.

Contract: ``with xlaprof.profile("logs") as run: ...`` records everything the process does inside
the block (host events, XLA executions, xlaprof spans, metric snapshots) and writes one session,
``<logdir>/plugins/profile/<run>/<host>_<pid>.xplane.pb`` with its manifest, staged and renamed
when whole. ``run.path`` is the session directory after the block. No server or port is needed.
"""
from __future__ import annotations

import os
import time

from collectors import metrics_sampler, torch_xla_import
from collectors.session_writer import StagedSession, host_name
from xlaprof.session.manifest import CaptureStatus, WorkerStatus
from xlaprof.xspace import vocabulary
from xlaprof.xspace.metrics import window_metrics


class profile:  # noqa: N801 - used like a function
    """Capture this process's own profile for the duration of a ``with`` block.

    Args:
        logdir: where the session goes (default ``xlaprof-logs``; local path or fsspec URL).
        name: the run name (default a timestamp; never overwrites an existing run).
    After the block, ``path`` is the session directory, ready for ``xlaprof analyze``.
    Raises ``XlaprofError`` for a bad run name, ``MissingExtraError`` without torch_xla.
    """

    def __init__(self, logdir: str = "xlaprof-logs", *, name: str | None = None) -> None:
        self.logdir = str(logdir)
        self.name = name
        self.path: str | None = None  # the session directory, once written
        self._session = None
        self._started = 0.0

    def __enter__(self) -> profile:
        profiler = torch_xla_import.profiler()
        metrics_sampler.ensure_sampler()
        self._started = time.time()
        self._session = profiler.TslProfilerSessionWrapper()
        metrics_sampler.emit()  # the window's first snapshot, before any work
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        metrics_sampler.emit()  # and its last
        data = self._session.stop()
        self._session = None
        staged = StagedSession(self.logdir, self.name)
        try:
            host = host_name()
            file_name, space = staged.add_capture(host, os.getpid(), data)
            metrics = window_metrics(space.plane(vocabulary.HOST_PLANE))
            worker = {"address": f"{host}:pid{os.getpid()}", "host": host, "port": os.getpid(),
                      "file": file_name, "status": WorkerStatus.OK.value, "error": None, "events": space.event_count,
                      "metrics": metrics.to_json() if metrics else None}
            self.path = staged.commit({"kind": "in-process", "duration_s": time.time() - self._started,
                                       "status": CaptureStatus.COMPLETE.value, "workers": [worker]})
        except BaseException:
            staged.discard()
            raise
