"""The session: one capture of one or more workers, loaded into the model the analyses read.

Contract:
- ``Session.open(path)`` accepts a session directory, a logdir (then its newest session), or a
  single ``.xplane.pb`` file (a session of that one worker), and reads the layout and manifest
  only. ``Session.read()`` then reads every worker's capture; ``Session.load(path)`` does both.
- Both raise ``SessionNotFoundError`` (nothing there) or ``BadProfileError`` (a capture or
  manifest that cannot be read), each with one line naming the file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from xlaprof.errors import SessionNotFoundError
from xlaprof.session import storage
from xlaprof.session.layout import XPLANE_SUFFIX, is_capture_file, list_sessions, worker_identity
from xlaprof.session.manifest import read_manifest
from xlaprof.xspace.reader import XSpaceData, read_xspace


@dataclass
class Worker:
    name: str  # "<host>_<port>", from the file name
    host: str
    port: int | None
    path: str  # the .xplane.pb file
    manifest: dict = field(default_factory=dict)  # this worker's entry in xlaprof.json
    space: XSpaceData | None = None  # the capture, once read

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port}" if self.port is not None else self.host

    def read(self) -> XSpaceData:
        """Read the capture (if not read yet) and return it."""
        if self.space is None:
            self.space = read_xspace(storage.read_bytes(self.path), source=self.path)
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

    @classmethod
    def load(cls, path: str, *, progress: bool = False) -> Session:
        """Open the session at ``path`` and read every worker's capture.

        ``path`` is a session directory, a logdir (its newest session) or one ``.xplane.pb``
        file, local or an fsspec URL. With ``progress`` a bar in MB shows on a terminal.
        Raises ``SessionNotFoundError`` or ``BadProfileError`` with one line naming the file."""
        return cls.open(path).read(progress=progress)

    @classmethod
    def open(cls, path: str) -> Session:
        """The session's layout and manifest, without reading the captures (see ``read``)."""
        path = str(path)
        if not storage.exists(path):
            raise SessionNotFoundError(f"{path}: no such file or directory")
        if not storage.isdir(path):
            if not path.endswith(XPLANE_SUFFIX):
                raise SessionNotFoundError(f"{path}: not a session directory, logdir or {XPLANE_SUFFIX} file")
            return cls(path, storage.basename(path), {}, [_worker(path, {})])
        run_dir = _resolve_run_dir(path)
        manifest = read_manifest(run_dir)
        entries = {w.get("file"): w for w in manifest.get("workers", [])}
        files = [f for f in storage.listdir(run_dir) if is_capture_file(f)]
        workers = [_worker(storage.join(run_dir, f), entries.get(f, {})) for f in files]
        return cls(run_dir, storage.basename(run_dir), manifest, workers)

    def read(self, *, progress: bool = False) -> Session:
        """Read the captures not read yet; returns the session itself."""
        pending = [w for w in self.workers if w.space is None]
        sizes = [_size(w.path) for w in pending]
        bar = None
        if progress and pending:
            from xlaprof.progress import progress_bar

            bar = progress_bar(desc="reading captures", total=round(sum(sizes) / 2**20, 1), unit="MB")
        try:
            for worker, size in zip(pending, sizes):
                worker.read()
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
    try:
        return storage.size(path)
    except OSError:
        return 0


def _worker(path: str, entry: dict) -> Worker:
    name, host, port = worker_identity(path)
    return Worker(name, entry.get("host", host), entry.get("port", port), path, entry)


def _resolve_run_dir(path: str) -> str:
    """A directory holding captures, or a logdir: then its newest complete run."""
    if any(f.endswith(XPLANE_SUFFIX) for f in storage.listdir(path)):
        return path
    sessions = list_sessions(path)
    if not sessions:
        raise SessionNotFoundError(
            f"{path}: no profile sessions here (expected {XPLANE_SUFFIX} files, or a logdir "
            f"with plugins/profile/<run>/)")
    return sessions[0].path
