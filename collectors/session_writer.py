"""Write a session so that it is whole or absent: staged under a dot-name, renamed when done.

Contract: ``StagedSession(logdir, name)`` reserves a unique run name and a staging directory
``<logdir>/plugins/profile/.<run>.partial``; ``add_capture`` validates each worker's XSpace
with xlaprof's reader before keeping it; ``commit(manifest)`` writes the manifest last and
renames the staging directory to ``<run>``; ``discard()`` removes the staging directory. Sessions
listed by ``xlaprof.session.list_sessions`` are therefore always complete; nothing outside the
staging directory is ever written or removed.
"""
from __future__ import annotations

import os
import platform
import time

from xlaprof import __version__
from xlaprof.errors import XlaprofError
from xlaprof.session import storage
from xlaprof.session.layout import new_run_name, profile_root, staging_name, worker_file_name
from xlaprof.session.manifest import write_manifest
from xlaprof.xspace.reader import XSpaceData, read_xspace


class StagedSession:
    def __init__(self, logdir: str, name: str | None = None) -> None:
        try:
            self.run = new_run_name(logdir, name)
        except ValueError as exc:
            raise XlaprofError(str(exc)) from None
        self.logdir = logdir
        self.final_path = storage.join(profile_root(logdir), self.run)
        self.staging = storage.join(profile_root(logdir), staging_name(self.run))
        storage.makedirs(self.staging)
        self.created_unix = time.time()

    def add_capture(self, host: str, port: int | None, data: bytes) -> tuple[str, XSpaceData]:
        """Validate and keep one worker's capture; returns its file name and parsed space."""
        file_name = worker_file_name(host, port)
        space = read_xspace(data, source=f"{host}:{port}")
        storage.write_bytes_atomic(storage.join(self.staging, file_name), data)
        return file_name, space

    def add_file(self, file_name: str, data: bytes) -> None:
        storage.write_bytes_atomic(storage.join(self.staging, file_name), data)

    def commit(self, manifest: dict) -> str:
        write_manifest(self.staging, {"run": self.run, "created_unix": self.created_unix,
                                      "versions": versions(), **manifest})
        storage.rename(self.staging, self.final_path)
        return self.final_path

    def discard(self) -> None:
        storage.remove_tree(self.staging)


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
