"""A bounded, thread-safe cache of session analyses, keyed on the identity of the session's files.

Contract:
- A session's identity is ``storage.file_stats(run_dir)``: the sorted ``(name, size, mtime_ns)``
  of the run directory's files (dot-files, which are staged writes, excluded), from one listing:
  it never reads a capture. A rewritten, added or removed file changes it.
- ``AnalysisCache.get(run_dir)`` returns a ``CachedAnalysis``. While the identity is unchanged it
  is served from memory; otherwise the session is read and analysed once, however many requests
  ask at the same moment (one lock per run directory). At most ``max_sessions`` analyses are kept,
  least recently used evicted first.
- A session that cannot be loaded raises ``SessionLoadError`` with one clear line, logged once as
  a warning naming the run and why; the failure is cached under the same identity, so a broken
  capture is not re-read (nor logged again) per request either.
- A session whose capture files add up to more than ``max_session_bytes`` is refused unread.
- ``CachedAnalysis.derived(key, build)`` memoizes data derived from the analysis (timeline lanes,
  table columns) for the entry's lifetime.
- With a Dask ``scheduler`` (or ``$XLAPROF_DASK_SCHEDULER``) the workers are analysed on that
  cluster (``xlaprof.dask_tasks``); the views that need a worker's events analyse it here when first asked.
  A cluster that cannot run the analysis raises its ``ClusterError`` unkept: the next request asks again.
- ``loads`` counts the sessions read from disk, and each read is logged at INFO ("reading
  session <dir>", shown by ``xlaprof -v dashboard``): the tests and the load benchmark check it.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xlaprof.analysis import SessionAnalysis, analyze
from xlaprof.dask_tasks import analysis_tasks, scheduler_address
from xlaprof.errors import ClusterError, SessionLoadError, XlaprofError
from xlaprof.session import XPLANE_SUFFIX, Session, storage

log = logging.getLogger("xlaprof")

Identity = tuple[tuple[str, int, int], ...]
DEFAULT_MAX_SESSIONS = 4
DEFAULT_MAX_SESSION_BYTES = 4 << 30  # 4 GiB of capture files: far above a normal capture


@dataclass
class CachedAnalysis:
    run_dir: str
    identity: Identity
    analysis: SessionAnalysis | None
    error: str | None = None
    _derived: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def derived(self, key: str, build: Callable[[SessionAnalysis], Any]) -> Any:
        """``build(analysis)``, computed once per entry."""
        with self._lock:
            if key not in self._derived:
                self._derived[key] = build(self.analysis)
            return self._derived[key]


class AnalysisCache:
    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS,
                 max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES, scheduler: str | None = None) -> None:
        self.scheduler = scheduler  # a Dask scheduler's address: its workers analyse (see xlaprof.dask_tasks)
        self.max_sessions = max(1, int(max_sessions))
        self.max_session_bytes = int(max_session_bytes)
        self.loads = 0
        self._entries: OrderedDict[str, CachedAnalysis] = OrderedDict()
        self._lock = threading.Lock()
        self._run_locks: dict[str, threading.Lock] = {}

    def get(self, run_dir: str) -> CachedAnalysis:
        """The analysis of ``run_dir``; ``SessionLoadError`` when it cannot be had."""
        identity = storage.file_stats(run_dir)
        entry = self._lookup(run_dir, identity)
        if entry is None:
            with self._run_lock(run_dir):
                # Another request may have loaded it while this one waited.
                entry = self._lookup(run_dir, identity)
                if entry is None:
                    entry = self._load(run_dir, identity)
                    self._store(entry)
        if entry.error is not None:
            raise SessionLoadError(entry.error)
        return entry

    def _lookup(self, run_dir: str, identity: Identity) -> CachedAnalysis | None:
        with self._lock:
            entry = self._entries.get(run_dir)
            if entry is None or entry.identity != identity:
                return None
            self._entries.move_to_end(run_dir)
            return entry

    def _store(self, entry: CachedAnalysis) -> None:
        with self._lock:
            self._entries[entry.run_dir] = entry
            self._entries.move_to_end(entry.run_dir)
            while len(self._entries) > self.max_sessions:
                self._entries.popitem(last=False)

    def _analyze(self, run_dir: str) -> SessionAnalysis:
        session = Session.open(run_dir)
        if scheduler_address(self.scheduler) is None:  # here: the timeline and gap views need the captures
            return analyze(session)
        with analysis_tasks(len(session.workers), scheduler=self.scheduler) as run_tasks:
            return analyze(session, run_tasks=run_tasks)

    def _run_lock(self, run_dir: str) -> threading.Lock:
        with self._lock:
            return self._run_locks.setdefault(run_dir, threading.Lock())

    def _load(self, run_dir: str, identity: Identity) -> CachedAnalysis:
        with self._lock:
            self.loads += 1
        log.info("reading session %s", run_dir)
        size = sum(s for name, s, _ in identity if name.endswith(XPLANE_SUFFIX) and s > 0)
        if size > self.max_session_bytes:
            return CachedAnalysis(run_dir, identity, None, (
                f"{run_dir}: the captures add up to {size / 2**20:.0f} MiB, more than the dashboard's "
                f"limit of {self.max_session_bytes / 2**20:.0f} MiB; analyse it with 'xlaprof analyze'"))
        try:
            return CachedAnalysis(run_dir, identity, self._analyze(run_dir))
        except ClusterError:  # the cluster's failure, not the session's: asked again next time
            raise
        except XlaprofError as exc:
            log.warning("session %s cannot be read: %s", storage.basename(run_dir), exc)
            return CachedAnalysis(run_dir, identity, None, str(exc))
        except Exception as exc:  # a bug in xlaprof must cost one session, not the dashboard
            log.exception("analysing %s failed", run_dir)
            return CachedAnalysis(run_dir, identity, None,
                                  f"{run_dir}: xlaprof failed to analyse this session "
                                  f"({type(exc).__name__}: {exc}); please report it")
