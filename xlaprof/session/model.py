"""The session: one capture of one or more workers, loaded into the model the analyses read.

Contract:
- ``Session.open(path)`` accepts a session directory, a logdir (then its newest session), or a
  single ``.xplane.pb`` file (a session of that one worker), and reads the layout and manifest
  only. ``Session.read()`` then reads every worker's capture; ``Session.load(path)`` does both.
- Both raise ``SessionNotFoundError`` (nothing there) or ``BadProfileError`` (a capture or
  manifest that cannot be read), each with one line naming the file.
- Hostile files: ``open`` checks every capture file (``storage.check_file``: a regular file, not a
  FIFO, device, directory or broken symlink, readable, at most ``max_capture_bytes``, by default
  ``capture_size_limit()``: ``XLAPROF_MAX_CAPTURE_SIZE`` or 8 GiB) before anything reads it, and the
  manifest field by field (``manifest.read_manifest``).
- One rule for a logdir's bad runs: ``newest_readable(path, attempt)`` returns ``attempt(session)``
  for the session at ``path``; for a logdir, of its newest run for which that works. A run that
  the listing finds unreadable (a bad manifest, a FIFO, a manifest without a capture) or whose
  ``Session.open`` or ``attempt`` raises ``BadProfileError`` (a corrupt, truncated or empty
  capture, nothing to analyse) is skipped, and once a readable one is found each skipped run is
  logged as one warning naming it and why; when none is readable, one ``BadProfileError`` naming
  the logdir and why its newest run failed. ``attempt`` is all the work the caller does with the
  session (read it, analyse it: wherever that runs, a Dask worker's error comes back here), so
  ``Session.load``, ``Session.open``, ``analyze`` and every command reading a logdir follow it.
  A session directory or a file is what it names: its errors are raised as they are.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from xlaprof.errors import BadProfileError, SessionNotFoundError, XlaprofError
from xlaprof.session import storage
from xlaprof.session.layout import (
    XPLANE_SUFFIX,
    SessionSummary,
    is_capture_file,
    list_sessions,
    worker_identity,
)
from xlaprof.session.manifest import read_manifest
from xlaprof.xspace.reader import XSpaceData, read_xspace_file

log = logging.getLogger("xlaprof")
T = TypeVar("T")

CAPTURE_SIZE_ENV = "XLAPROF_MAX_CAPTURE_SIZE"
DEFAULT_MAX_CAPTURE_BYTES = 8 * 2**30
CAPTURE_SIZE_HINT = f"raise the limit with --max-capture-size SIZE (or {CAPTURE_SIZE_ENV})"


def capture_size_limit() -> int:
    """The largest capture file read, in bytes: ``XLAPROF_MAX_CAPTURE_SIZE`` (``8GiB``, ``500MB``),
    else ``DEFAULT_MAX_CAPTURE_BYTES``."""
    text = os.environ.get(CAPTURE_SIZE_ENV)
    if not text:
        return DEFAULT_MAX_CAPTURE_BYTES
    try:
        return storage.parse_size(text)
    except ValueError as exc:
        raise XlaprofError(f"{CAPTURE_SIZE_ENV}: {exc}") from None


@dataclass
class Worker:
    name: str  # "<host>_<port>", from the file name
    host: str
    port: int | None
    path: str  # the .xplane.pb file
    manifest: dict = field(default_factory=dict, repr=False)  # this worker's entry in xlaprof.json
    space: XSpaceData | None = field(default=None, repr=False)  # the capture, once read

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port}" if self.port is not None else self.host

    def read(self, limit: int | None = None) -> XSpaceData:
        """Read the capture (if not read yet; at most ``limit`` bytes, by default
        ``capture_size_limit()``) and return it: decoded from the file a piece at a time
        (``reader.CHUNK_BYTES``), never held whole in memory."""
        if self.space is None:
            limit = capture_size_limit() if limit is None else limit
            with storage.open_checked(self.path, limit, CAPTURE_SIZE_HINT) as (handle, size):
                self.space = read_xspace_file(handle, size, source=self.path)
        return self.space


@dataclass
class Session:
    """One capture of one or more workers: ``Session.load(path)`` reads it, ``analyze`` explains it.

    ``workers`` holds each worker's capture (``Worker.space`` once read) and its manifest entry;
    ``manifest`` is the session's ``xlaprof.json`` (``{}`` for a TensorBoard run without one).
    """

    path: str  # the run directory (or the single .xplane.pb file)
    run: str
    manifest: dict
    workers: list[Worker]
    max_capture_bytes: int | None = None  # the largest capture file read; None: capture_size_limit()

    def __repr__(self) -> str:
        return f"<Session {self.path!r}: {len(self.workers)} worker(s), {'read' if self.is_read else 'not read'}>"

    @classmethod
    def load(cls, path: str, *, progress: bool = False, max_capture_bytes: int | None = None) -> Session:
        """Open the session at ``path`` and read every worker's capture.

        ``path`` is a session directory, a logdir (its newest readable session) or one
        ``.xplane.pb`` file, local or an fsspec URL. With ``progress`` a bar in MB shows on a
        terminal. Raises ``SessionNotFoundError`` or ``BadProfileError`` with one line naming the file."""
        return newest_readable(path, lambda session: session.read(progress=progress),
                               max_capture_bytes=max_capture_bytes)

    @classmethod
    def open(cls, path: str, *, max_capture_bytes: int | None = None) -> Session:
        """The session's layout and manifest, without reading the captures (see ``read``); every
        capture file checked (a regular file within the size limit). A logdir: its newest run
        that opens (``newest_readable``)."""
        return newest_readable(path, lambda session: session, max_capture_bytes=max_capture_bytes)

    @classmethod
    def _open_one(cls, path: str, max_capture_bytes: int | None) -> Session:
        """The session of a run directory or a capture file (``_runs(path)`` found it one)."""
        if not storage.isdir(path):
            session = cls(path, storage.basename(path), {}, [_worker(path, {})], max_capture_bytes)
        else:
            manifest = read_manifest(path)
            entries = {w.get("file"): w for w in manifest.get("workers") or []}
            files = [f for f in storage.listdir(path) if is_capture_file(f)]
            workers = [_worker(storage.join(path, f), entries.get(f, {})) for f in files]
            session = cls(path, storage.basename(path), manifest, workers, max_capture_bytes)
        for worker in session.workers:
            session.check_capture(worker.path)
        return session

    @property
    def capture_limit(self) -> int:
        return self.max_capture_bytes if self.max_capture_bytes is not None else capture_size_limit()

    def check_capture(self, path: str) -> int:
        """The size of one of its capture files; ``UnsafeFileError`` when it must not be read."""
        return storage.check_file(path, self.capture_limit, CAPTURE_SIZE_HINT)

    def read(self, *, progress: bool = False) -> Session:
        """Read the captures not read yet; returns the session itself."""
        pending = [w for w in self.workers if w.space is None]
        sizes = [self.check_capture(w.path) for w in pending]
        bar = None
        if progress and pending:
            from xlaprof.progress import progress_bar

            bar = progress_bar(desc="reading captures", total=round(sum(sizes) / 2**20, 1), unit="MB")
        try:
            for worker, size in zip(pending, sizes):
                worker.read(self.capture_limit)
                if bar is not None:
                    bar.update(round(size / 2**20, 1))
        finally:
            if bar is not None:
                bar.close()
        return self

    @property
    def capture_bytes(self) -> int:
        """The workers' capture files' sizes, added up."""
        return sum(_size(w.path) for w in self.workers)

    @property
    def is_read(self) -> bool:
        return all(w.space is not None for w in self.workers)

    @property
    def event_count(self) -> int:
        return sum(w.space.event_count for w in self.workers if w.space is not None)


def _size(path: str) -> int:
    """A file's size without opening it (0 where it cannot be had: reading it will say why)."""
    try:
        return storage.size(path)
    except (OSError, XlaprofError):
        return 0


def _worker(path: str, entry: dict) -> Worker:
    name, host, port = worker_identity(path)
    return Worker(name, entry.get("host", host), entry.get("port", port), path, entry)


def newest_readable(path: str | os.PathLike, attempt: Callable[[Session], T], *,
                    max_capture_bytes: int | None = None) -> T:
    """``attempt(session)`` of the session at ``path``; of a logdir, its newest run for which
    that works, the newer ones skipped with a warning each (the module's one rule)."""
    path = str(os.fspath(path))
    runs = _runs(path)
    if runs is None:  # a session directory or a file: what it names
        return attempt(Session._open_one(path, max_capture_bytes))
    skipped = []
    for run in runs:
        try:
            if run.error is not None:
                raise BadProfileError(run.error)
            result = attempt(Session._open_one(run.path, max_capture_bytes))
        except BadProfileError as exc:
            skipped.append((run.run, str(exc)))
            continue
        for name, why in skipped:
            log.warning("skipping session %s, which cannot be read: %s", name, why)
        return result
    raise BadProfileError(f"{path}: no readable session here; the newest, {skipped[0][0]}: {skipped[0][1]}")


def _runs(path: str) -> list[SessionSummary] | None:
    """The runs of the logdir ``path``, newest first; None when ``path`` is itself a session (a
    directory holding captures, or one capture file)."""
    if not storage.lexists(path):
        raise SessionNotFoundError(f"{path}: no such file or directory")
    if not storage.is_url(path) and not os.path.exists(path):
        storage.check_file(path)  # a symlink that loops or leads nowhere: says which
    if not storage.isdir(path):
        if not path.endswith(XPLANE_SUFFIX):
            raise SessionNotFoundError(f"{path}: not a session directory, logdir or {XPLANE_SUFFIX} file")
        return None
    if any(is_capture_file(f) for f in storage.listdir(path)):
        return None
    sessions = list_sessions(path)
    if not sessions:
        raise SessionNotFoundError(
            f"{path}: no profile sessions here (expected {XPLANE_SUFFIX} files, or a logdir "
            f"with plugins/profile/<run>/)")
    return sessions
