"""Where sessions live on disk: TensorBoard/XProf's layout, so a capture also opens in TensorBoard.

Layout::

    <logdir>/plugins/profile/<run>/<host>_<port>.xplane.pb          one per worker
    <logdir>/plugins/profile/<run>/<host>_<port>.pt_xla_debug.txt   the worker's PT_XLA_DEBUG_FILE, if kept
    <logdir>/plugins/profile/<run>/xlaprof.json                     the manifest (written last)

Contract:
- ``list_sessions(logdir)`` lists complete sessions, newest first. A run directory being written
  is staged under a dot-name and renamed when whole, so it is never listed half-written. A run
  that cannot be read (a manifest that ``read_manifest`` refuses, a capture file that is no
  regular file or leads nowhere, a run that is a symlink loop, a manifest without a capture) is
  listed all the same, with its one-line ``error`` (and ``manifest == {}``): one bad run never
  hides the others. A directory with neither a capture nor a manifest is no run. Nothing is
  opened but the manifests; capture files are only checked (``storage.check_file``).
- ``new_run_name`` never returns the name of an existing or staged run: a capture never
  overwrites another. It raises ``ValueError`` for a name that is not letters, digits, ``_-.``.
- The file suffixes are defined here and nowhere else.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from xlaprof.errors import XlaprofError
from xlaprof.session import storage
from xlaprof.session.manifest import MANIFEST_NAME, read_manifest

XPLANE_SUFFIX = ".xplane.pb"
DEBUG_FILE_SUFFIX = ".pt_xla_debug.txt"
STAGING_SUFFIX = ".partial"
SCRATCH_SUFFIX = ".scratch"
_WORKER_FILE = re.compile(r"^(?P<host>.+?)(?:_(?P<port>\d+))?\.xplane\.pb$")
_RUN_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def profile_root(logdir: str) -> str:
    return storage.join(logdir, "plugins", "profile")


def worker_file_name(host: str, port: int | None) -> str:
    safe_host = re.sub(r"[^A-Za-z0-9.\-]", "-", host)
    return f"{safe_host}_{port}{XPLANE_SUFFIX}" if port is not None else f"{safe_host}{XPLANE_SUFFIX}"


def debug_file_name(capture_file: str) -> str:
    """The name a worker's PT_XLA_DEBUG_FILE is kept under, beside its capture."""
    return capture_file[: -len(XPLANE_SUFFIX)] + DEBUG_FILE_SUFFIX


def is_capture_file(name: str) -> bool:
    return name.endswith(XPLANE_SUFFIX) and not name.startswith(".")


def worker_identity(path: str) -> tuple[str, str, int | None]:
    """(name, host, port) of a capture file named ``<host>_<port>.xplane.pb``."""
    base = storage.basename(path)
    match = _WORKER_FILE.match(base)
    host = match.group("host") if match else base
    port = int(match.group("port")) if match and match.group("port") else None
    return base[: -len(XPLANE_SUFFIX)], host, port


def new_run_name(logdir: str, name: str | None = None) -> str:
    """A run name that no existing (or staged) run of this logdir has."""
    base = name or time.strftime("%Y_%m_%d_%H_%M_%S")
    if not _RUN_NAME.fullmatch(base) or base.startswith("."):
        raise ValueError(f"run name {base!r} must be letters, digits, '_', '-' or '.'")
    taken = {entry.lstrip(".").split(STAGING_SUFFIX)[0] for entry in storage.listdir(profile_root(logdir))}
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def staging_name(run: str) -> str:
    """The hidden name a run is written under until it is whole."""
    return f".{run}{STAGING_SUFFIX}"


def scratch_name(run: str, token: str) -> str:
    """The hidden name of a directory where remote profiler servers drop a capture of ``run`` for
    the client to collect (``token`` keeps concurrent captures apart); never a run."""
    return f".{run}.{token}{SCRATCH_SUFFIX}"


@dataclass(frozen=True)
class SessionSummary:
    path: str  # the run directory
    run: str
    created_unix: float  # seconds since the epoch: the manifest's, else the first capture's mtime
    workers: list[str]  # capture file names without the suffix
    manifest: dict
    error: str | None = None  # why the run cannot be read, in one line; None: readable


def list_sessions(logdir: str) -> list[SessionSummary]:
    """Complete sessions under ``logdir``, newest first."""
    root = profile_root(logdir)
    found = []
    for run in storage.listdir(root):
        if run.startswith("."):
            continue  # staged, not yet whole
        run_dir = storage.join(root, run)
        try:
            files = [f for f in storage.listdir(run_dir) if is_capture_file(f)]
        except XlaprofError as exc:  # a run that is a symlink loop, a directory this user may not list
            found.append(SessionSummary(run_dir, run, _lmtime(run_dir), [], {}, str(exc)))
            continue
        if not files:
            if storage.exists(storage.join(run_dir, MANIFEST_NAME)):  # a session whose captures are gone
                found.append(SessionSummary(run_dir, run, _lmtime(run_dir), [], {},
                                            f"{run_dir}: a manifest ({MANIFEST_NAME}) but no {XPLANE_SUFFIX} capture"))
            continue
        workers = [f[: -len(XPLANE_SUFFIX)] for f in files]
        try:
            manifest = read_manifest(run_dir)
            for f in files:
                storage.check_file(storage.join(run_dir, f))
        except XlaprofError as exc:  # one bad run must not hide the others
            found.append(SessionSummary(run_dir, run, _lmtime(run_dir), workers, {}, str(exc)))
            continue
        created = manifest.get("created_unix") or storage.mtime(storage.join(run_dir, files[0]))
        found.append(SessionSummary(run_dir, run, float(created), workers, manifest))
    found.sort(key=lambda s: (s.created_unix, s.run), reverse=True)
    return found


def _lmtime(path: str) -> float:
    """When ``path`` itself (a symlink: the link) last changed; 0 where even that is unknown."""
    try:
        return storage.mtime(path) if storage.is_url(path) else os.lstat(path).st_mtime
    except (OSError, XlaprofError):
        return 0.0
