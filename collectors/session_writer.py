"""Write a session so that it is whole or absent: staged under a dot-name, renamed when done.

Contract: ``StagedSession(logdir, name)`` picks a run name no run of the logdir has (``run``) and
creates nothing yet. The first write (``add_capture``, which validates each worker's XSpace with
xlaprof's reader before keeping it, or ``add_file``) creates the staging directory
``<logdir>/plugins/profile/.<run>.partial`` (and the directories above it), claiming it atomically:
if another capture took the name meanwhile, ``run`` moves on to a free one. ``commit(manifest)``
writes the manifest last and renames the staging directory to ``<run>``; ``discard()`` removes the
staging directory, if any. So a capture that gets nothing leaves no trace in the logdir; sessions
listed by ``xlaprof.session.list_sessions`` are always complete; nothing outside the staging
directory is ever written or removed.
"""
from __future__ import annotations

import os
import platform
import time
import uuid

from xlaprof._version import __version__
from xlaprof.errors import XlaprofError
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
        storage.write_bytes_atomic(storage.join(self._claim(), file_name), data)
        return file_name, space

    def add_file(self, file_name: str, data: bytes) -> None:
        storage.write_bytes_atomic(storage.join(self._claim(), file_name), data)

    def commit(self, manifest: dict) -> str:
        staging = self._claim()
        write_manifest(staging, {"run": self.run, "created_unix": self.created_unix,
                                 "versions": versions(), **manifest})
        storage.rename(staging, self.final_path)
        return self.final_path

    def discard(self) -> None:
        if self.staging is not None:
            storage.remove_tree(self.staging)

    def _free_name(self) -> str:
        try:
            return new_run_name(self.logdir, self._name)
        except ValueError as exc:
            raise XlaprofError(str(exc)) from None

    def _claim(self) -> str:
        """The staging directory, created now if this is the first write."""
        while self.staging is None:
            staging = storage.join(profile_root(self.logdir), staging_name(self.run))
            if storage.make_new_dir(staging):
                if not storage.exists(self.final_path):
                    self.staging = staging
                    break
                storage.remove_tree(staging)  # ours, just made: a run of that name was finished meanwhile
            self.run = self._free_name()  # another capture took the name since this one began
        return self.staging


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
