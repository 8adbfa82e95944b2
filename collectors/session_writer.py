"""Write a session so that it is whole or absent: staged under a dot-name, renamed when done.

Contract: ``StagedSession(logdir, name)`` picks a run name no run of the logdir has (``run``) and
creates nothing yet. The first write (``add_capture``, which validates each worker's XSpace with
xlaprof's reader before keeping it, or ``add_file``) creates the staging directory
``<logdir>/plugins/profile/.<run>.partial`` (and the directories above it), claiming it atomically:
if another capture took the name meanwhile, ``run`` moves on to a free one. ``commit(manifest)``
writes the manifest last and renames the staging directory to ``<run>``; ``discard()`` removes the
staging directory, if any, and the directories above it that the claim created (a new logdir's
``plugins/profile``) when they are empty again. So a capture that gets nothing, or fails to write
(a full disk), leaves no trace in the logdir; sessions listed by ``xlaprof.session.list_sessions``
are always complete; nothing outside the staging directory is ever written, nor removed but those
empty directories. A write that fails (``OSError``) is ``XlaprofError`` naming the run's path and
the file, and saying that nothing was kept (once the caller discards). The claim is made and
recorded with the command's Ctrl-C and SIGTERM held back (``xlaprof.interrupts.held``): an interrupt
that came as the staging directory was made left it behind, unrecorded, for no discard to remove.
"""
from __future__ import annotations

import contextlib
import os
import platform
import time
import uuid

from xlaprof._version import __version__
from xlaprof.errors import XlaprofError
from xlaprof.interrupts import held
from xlaprof.session import storage
from xlaprof.session.layout import new_run_name, profile_root, scratch_name, staging_name, worker_file_name
from xlaprof.session.manifest import write_manifest
from xlaprof.xspace.reader import XSpaceData, read_xspace


class StagedSession:
    def __init__(self, logdir: str, name: str | None = None) -> None:
        self.logdir = logdir
        self._name = name
        self.run = self._free_name()
        self.staging: str | None = None  # created by the first write
        self.created: list[str] = []  # directories above the staging the claim created, deepest first
        self.created_unix = time.time()

    @property
    def final_path(self) -> str:
        return storage.join(profile_root(self.logdir), self.run)

    def scratch_dir(self) -> str:
        """A fresh hidden directory beside the runs for remote profiler servers to write into
        (created by them, removed by the caller); never listed as a session."""
        return storage.join(profile_root(self.logdir), scratch_name(self.run, uuid.uuid4().hex[:8]))

    def add_capture(self, host: str, port: int | None, data: bytes) -> tuple[str, XSpaceData]:
        """Validate and keep one worker's capture; returns its file name and parsed space."""
        file_name = worker_file_name(host, port)
        space = read_xspace(data, source=f"{host}:{port}")
        self.add_file(file_name, data)
        return file_name, space

    def add_file(self, file_name: str, data: bytes) -> None:
        with self._writing(file_name):
            storage.write_bytes_atomic(storage.join(self._claim(), file_name), data)

    def commit(self, manifest: dict) -> str:
        with self._writing("xlaprof.json"):
            staging = self._claim()
            write_manifest(staging, {"run": self.run, "created_unix": self.created_unix,
                                     "versions": versions(), **manifest})
            storage.rename(staging, self.final_path)
        return self.final_path

    def discard(self) -> None:
        if self.staging is not None:
            storage.remove_tree(self.staging)
        for directory in self.created:
            with contextlib.suppress(OSError):  # no longer empty: another capture's now
                os.rmdir(directory)

    @contextlib.contextmanager
    def _writing(self, file_name: str):
        try:
            yield
        except OSError as exc:
            raise XlaprofError(f"{self.final_path}: cannot write {file_name}: {exc.strerror or exc}; "
                               f"nothing was kept") from None

    def _free_name(self) -> str:
        try:
            return new_run_name(self.logdir, self._name)
        except ValueError as exc:
            raise XlaprofError(str(exc)) from None

    def _claim(self) -> str:
        """The staging directory, created now if this is the first write."""
        while self.staging is None:
            staging = storage.join(profile_root(self.logdir), staging_name(self.run))
            self.created = self.created or _missing_directories(os.path.dirname(staging))
            with held():  # made and recorded together: an interrupted capture's discard() removes it
                if storage.make_new_dir(staging):
                    if not storage.exists(self.final_path):
                        self.staging = staging
                        break
                    storage.remove_tree(staging)  # ours, just made: a run of that name was finished meanwhile
            self.run = self._free_name()  # another capture took the name since this one began
        return self.staging


def _missing_directories(path: str) -> list[str]:
    """The directories of ``path`` and above that do not exist (locally), deepest first."""
    missing = []
    while not storage.is_url(path) and path and not os.path.exists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def versions() -> dict[str, str]:
    """Versions on the capturing machine (the workers' torch_xla is in each worker's metrics)."""
    from importlib import metadata

    found = {"xlaprof": __version__, "python": platform.python_version()}
    for package in ("xprof", "torch_xla", "torch"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def host_name() -> str:
    return os.environ.get("HOSTNAME") or platform.node() or "localhost"
