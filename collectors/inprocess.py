"""``xlaprof.profile(logdir)``: capture this process's own profile, for notebooks and scripts.

Contract: ``with xlaprof.profile("logs") as run: ...`` records everything the process does inside
the block (host events, XLA executions, xlaprof spans, metric snapshots) and writes one session,
``<logdir>/plugins/profile/<run>/<host>_<pid>.xplane.pb`` with its manifest, staged and renamed
when whole. ``run.path`` is the session directory after the block. No server or port is needed.

With ``steps=range(a, b)`` it records steps ``a`` to ``b - 1`` only, by the numbers of
``xlaprof.step(n)`` inside the block: recording starts as the first step of the range (or a
later step of it, when the loop skips the first) opens, and stops as the last one closes, or as
a step past the range opens, or at the end of the block; the session is written right then (the
step that closes the window waits for the write). ``steps=range(0, 20)`` catches what a capture
of a running job misses: the compiles of the first steps, which torch_xla caches afterwards.
Where no step of the range ran, nothing is written, ``run.path`` stays None and one warning says
so. One step-scheduled capture at a time per process.
"""
from __future__ import annotations

import logging
import os
import time

from collectors import metrics_sampler, read_calls, spans, stack_sampler, torch_xla_import
from collectors.session_writer import StagedSession, host_name
from xlaprof.errors import XlaprofError
from xlaprof.session.manifest import CaptureStatus, WorkerStatus
from xlaprof.xspace import vocabulary
from xlaprof.xspace.metrics import window_metrics

log = logging.getLogger("xlaprof")


class profile:  # noqa: N801 - used like a function
    """Capture this process's own profile for the duration of a ``with`` block, or some of its steps.

    Args:
        logdir: where the session goes (default ``xlaprof-logs``; local path or fsspec URL).
        name: the run name (default a timestamp; never overwrites an existing run).
        steps: record only these ``xlaprof.step`` numbers, a ``range`` with step 1 (e.g.
            ``range(0, 20)``: the first 20 steps, compiles included); default: the whole block.
        stack_hz: Python stack samples per second and thread while recording (default 1000,
            i.e. one per millisecond; 0 turns stack sampling off; at most 10000). Above 0 the
            reading ops are marked at their calls too, for the rest of the process (a mark costs
            a read some microseconds even while nothing records); 0 leaves them as they are.
    After the block, ``path`` is the session directory, ready for ``xlaprof analyze`` (None when
    ``steps`` named no step that ran). Raises ``XlaprofError`` for a bad run name, ``steps`` or
    ``stack_hz``, or a second step-scheduled capture while one is active; ``MissingExtraError``
    without torch_xla.
    """

    def __init__(self, logdir: str = "xlaprof-logs", *, name: str | None = None, steps: range | None = None,
                 stack_hz: float = stack_sampler.DEFAULT_RATE_HZ) -> None:
        if steps is not None and (not isinstance(steps, range) or steps.step != 1 or not len(steps)):
            raise XlaprofError(f"steps={steps!r}: give the steps to record as a non-empty range, e.g. range(0, 20)")
        self.logdir = str(logdir)
        self.name = name
        self.steps = steps
        self.stack_hz = stack_sampler.check_rate(stack_hz)
        self._rate_before = self.stack_hz  # the process's stack rate, restored after the capture
        self.path: str | None = None  # the session directory, once written
        self._session = None
        self._started = 0.0
        self._done = False

    def __enter__(self) -> profile:
        torch_xla_import.profiler()  # fail here, not in the first step, without torch_xla
        metrics_sampler.ensure_sampler()
        stack_sampler.ensure_sampler()
        read_calls.install_for(self.stack_hz)
        if self.steps is None:
            self._start()
        else:
            spans.listen_to_steps(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.steps is not None:
            spans.listen_to_steps(None)
        if self._session is not None:
            self._finish()
        elif self.steps is not None and not self._done:
            log.warning("xlaprof.profile: no step of %r ran inside the block; nothing was captured", self.steps)

    # Called by xlaprof.step (collectors.spans) while this capture listens.
    def step_starting(self, n: int) -> None:
        if self._session is not None and n >= self.steps.stop:
            self._finish()
        elif self._session is None and not self._done and n in self.steps:
            self._start()

    def step_ended(self, n: int) -> None:
        if self._session is not None and n >= self.steps[-1]:
            self._finish()

    def _start(self) -> None:
        self._started = time.time()
        self._session = torch_xla_import.profiler().TslProfilerSessionWrapper()
        metrics_sampler.emit()  # the window's first snapshot, before any work
        self._rate_before = stack_sampler.set_rate(self.stack_hz)
        stack_sampler.resume()  # stacks from the first sample on, not from the sampler's next poll

    def _finish(self) -> None:
        stack_sampler.flush()  # the open stack events close while recording, so none is lost
        metrics_sampler.emit()  # and the window's last snapshot
        data = self._session.stop()
        stack_sampler.set_rate(self._rate_before)
        self._session = None
        self._done = True
        staged = StagedSession(self.logdir, self.name)
        try:
            host = host_name()
            file_name, space = staged.add_capture(host, os.getpid(), data)
            metrics = window_metrics(space.plane(vocabulary.HOST_PLANE))
            worker = {"address": f"{host}:pid{os.getpid()}", "host": host, "port": os.getpid(),
                      "file": file_name, "status": WorkerStatus.OK.value, "error": None, "events": space.event_count,
                      "metrics": metrics.to_json() if metrics else None}
            scheduled = {"steps": [self.steps.start, self.steps.stop]} if self.steps is not None else {}
            self.path = staged.commit({"kind": "in-process", "duration_s": time.time() - self._started, **scheduled,
                                       "status": CaptureStatus.COMPLETE.value, "workers": [worker]})
        except BaseException:
            staged.discard()
            raise
