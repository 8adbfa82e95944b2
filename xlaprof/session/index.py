"""The persisted summary of each session of a logdir, so that hundreds of sessions list fast after a restart.

Layout: one JSON file per logdir, ``<logdir>/plugins/profile/.xlaprof-index.json`` (a dot-name:
never listed as a run, never part of a run's files)::

    {"format": 1, "version": "<the summaries' version>",
     "sessions": {"<run>": {"files": [[name, size, mtime_ns], ...], "summary": {...} | null, "error": str | null}}}

Contract:
- ``SessionIndex.open(logdir, version)`` reads the file once. A missing, unreadable or corrupt
  file (not JSON, JSON nested past the parser's depth, a FIFO, a device, a symlink to one, over
  ``MAX_INDEX_BYTES``), another format, or summaries of another ``version`` (the caller's: it
  changes when what a summary means changes) make an empty index, rebuilt by the next ``save``
  (which replaces the entry itself, never what a symlink points to): the index is a cache and
  never an error.
- ``index.summary(session, compute, parse)`` returns ``(parse(summary), error)`` of a
  ``SessionSummary``: the stored summary while the session's files (``storage.file_stats``:
  names, sizes, modification times) are exactly those it was computed from and ``parse`` accepts
  it, so it is never trusted over the files; else ``compute(run_dir)``, stored. An
  ``XlaprofError`` that ``compute`` raises is the session's ``error``, stored alike (a broken
  session is not re-read per listing either), but for a ``ClusterError`` (a Dask cluster that
  could not analyse it): returned, never stored, so the next listing asks again.
- ``index.save(runs)`` writes the file atomically when something was computed, keeping the
  entries of ``runs`` only (sessions removed from the logdir drop out) and merging entries another
  process wrote meanwhile. A logdir that cannot be written is logged, never an error.
Thread-safe: the dashboard lists from several requests at once.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from xlaprof.errors import ClusterError, XlaprofError
from xlaprof.session import storage
from xlaprof.session.layout import SessionSummary, profile_root

log = logging.getLogger("xlaprof")

INDEX_NAME = ".xlaprof-index.json"
FORMAT = 1  # of the file itself; the summaries inside carry the caller's version
MAX_INDEX_BYTES = 64 << 20  # a few hundred bytes a session: a larger file is not an index
T = TypeVar("T")


@dataclass(frozen=True)
class IndexEntry:
    files: tuple[tuple[str, int, int], ...]  # the session's files when its summary was computed
    summary: dict | None
    error: str | None

    def to_json(self) -> dict:
        return {"files": [list(f) for f in self.files], "summary": self.summary, "error": self.error}

    @classmethod
    def from_json(cls, data: dict) -> IndexEntry:
        return cls(tuple((str(n), int(s), int(m)) for n, s, m in data["files"]), data["summary"], data["error"])


class SessionIndex:
    def __init__(self, path: str, version: str, entries: dict[str, IndexEntry]) -> None:
        self.path = path
        self.version = version
        self._entries = entries
        self._computed: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, logdir: str, version: str) -> SessionIndex:
        path = storage.join(profile_root(logdir), INDEX_NAME)
        return cls(path, version, _read(path, version))

    def summary(self, session: SessionSummary, compute: Callable[[str], dict],
                parse: Callable[[dict], T]) -> tuple[T | None, str | None]:
        files = storage.file_stats(session.path)
        with self._lock:
            entry = self._entries.get(session.run)
        if entry is not None and entry.files == files:
            try:
                return (parse(entry.summary) if entry.summary is not None else None), entry.error
            except (TypeError, ValueError, KeyError) as exc:  # stored by another xlaprof, or edited
                log.info("recomputing the summary of %s: %s", session.path, exc)
        try:
            entry = IndexEntry(files, compute(session.path), None)
        except ClusterError as exc:  # the cluster's failure, not the session's: neither kept nor stored
            return None, str(exc)
        except XlaprofError as exc:
            entry = IndexEntry(files, None, str(exc))
        with self._lock:
            self._entries[session.run] = entry
            self._computed.add(session.run)
        return (parse(entry.summary) if entry.summary is not None else None), entry.error

    def save(self, runs: Iterable[str]) -> None:
        """Write the index if anything was computed since it was read, for these ``runs`` only."""
        keep = set(runs)
        with self._lock:
            if not self._computed:
                return
            merged = {run: e for run, e in _read(self.path, self.version).items() if run in keep}
            merged.update({run: self._entries[run] for run in self._computed if run in keep})
            self._computed.clear()
            data = {"format": FORMAT, "version": self.version,
                    "sessions": {run: e.to_json() for run, e in sorted(merged.items())}}
            try:
                storage.write_bytes_atomic(self.path, json.dumps(data, separators=(",", ":")).encode())
            except OSError as exc:  # a read-only logdir lists as fast as it can, and that is all
                log.info("the session index %s could not be written: %s", self.path, exc)


def _read(path: str, version: str) -> dict[str, IndexEntry]:
    try:
        data = json.loads(storage.read_bytes(path, MAX_INDEX_BYTES))
        if data.get("format") != FORMAT or data.get("version") != version:
            return {}
        return {str(run): IndexEntry.from_json(e) for run, e in data["sessions"].items()}
    except FileNotFoundError:
        return {}
    except (OSError, XlaprofError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        log.info("ignoring the session index %s: %s", path, exc)
        return {}
