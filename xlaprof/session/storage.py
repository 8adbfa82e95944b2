"""File access for logdirs that may be local paths or fsspec URLs (``gs://``, ``memory://``, ...).

Contract: every function takes a path string; a string with ``://`` goes through fsspec (whose
backend for that scheme must be installed), anything else through the local filesystem.
``write_bytes_atomic`` never leaves a half-written file under the final name.

Hostile paths: ``check_file(path, limit)`` says in one line (``UnsafeFileError``) why a path must
not be read: not a regular file (a FIFO, a device, a socket, a directory), a symlink that loops
or leads nowhere, a file this process may not read, or one larger than ``limit`` bytes.
``read_bytes`` and ``open_checked`` (a file object for ranged reads, with its size) check first, so
no FIFO, device or directory is ever opened for reading, and open without blocking (a file
swapped for a FIFO between the check and the open is refused too).
Remote: every fsspec call is bounded by ``remote_timeout_s()`` (``XLAPROF_REMOTE_TIMEOUT``,
default ``DEFAULT_REMOTE_TIMEOUT_S``): past it, or on any failure of the backend other than a
missing file, one line (``StorageTimeoutError``, ``UnsafeFileError``) instead of the backend's
retries and tracebacks.
"""
from __future__ import annotations

import contextlib
import errno
import math
import os
import posixpath
import stat
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import BinaryIO, TypeVar

from xlaprof.errors import StorageTimeoutError, UnsafeFileError, XlaprofError

REMOTE_TIMEOUT_ENV = "XLAPROF_REMOTE_TIMEOUT"
DEFAULT_REMOTE_TIMEOUT_S = 20.0
T = TypeVar("T")


def is_url(path: str) -> bool:
    return "://" in str(path)


def remote_timeout_s() -> float:
    """Seconds a remote storage call may take: ``XLAPROF_REMOTE_TIMEOUT``, else the default."""
    text = os.environ.get(REMOTE_TIMEOUT_ENV)
    try:
        value = float(text) if text else DEFAULT_REMOTE_TIMEOUT_S
    except ValueError:
        raise XlaprofError(f"{REMOTE_TIMEOUT_ENV}={text!r}: expected seconds, e.g. 20") from None
    if not 0 < value < math.inf:
        raise XlaprofError(f"{REMOTE_TIMEOUT_ENV}={text!r}: expected a finite number of seconds above 0")
    return value


def _remote(path: str, call: Callable[..., T], *args) -> T:
    """``call(fs, *args)`` on the fsspec filesystem of ``path``, within ``remote_timeout_s()``.

    A missing file stays ``FileNotFoundError`` (callers treat it as absence); anything else the
    backend raises, or a call still running at the deadline, is one line naming ``path``. The
    late call is left to finish in a daemon thread: a backend offers no way to cancel it."""
    timeout = remote_timeout_s()
    outcome: list = []

    def run() -> None:
        try:
            import fsspec

            fs, _, _ = fsspec.get_fs_token_paths(path)
            outcome.append((True, call(fs, *args)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    worker = threading.Thread(target=run, daemon=True, name="xlaprof-remote")
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise StorageTimeoutError(
            f"{path}: the storage did not answer within {timeout:g} s (is it reachable? wait longer "
            f"with --remote-timeout SECONDS or {REMOTE_TIMEOUT_ENV})")
    ok, value = outcome[0]
    if ok:
        return value
    if isinstance(value, (FileNotFoundError, XlaprofError)):
        raise value
    if isinstance(value, ImportError):
        raise XlaprofError(f"{path}: no fsspec backend for this URL ({_first_line(value)})") from None
    raise UnsafeFileError(f"{path}: the storage failed: {type(value).__name__}: {_first_line(value)}") from None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:200] + "...") if len(text) > 200 else text


def check_file(path: str, limit: int | None = None, limit_hint: str = "") -> int:
    """The size of the regular file at ``path``; ``UnsafeFileError`` with one line when it is
    anything else, cannot be read, or is larger than ``limit`` bytes (``limit_hint`` says how to
    raise the limit); ``FileNotFoundError`` when nothing is there. Opens nothing."""
    if is_url(path):
        info = _remote(path, lambda fs: fs.info(path))
        if info.get("type") == "directory":
            raise UnsafeFileError(f"{path}: a directory, not a file")
        size_bytes = int(info.get("size") or 0)
    else:
        size_bytes = _local_stat(path).st_size
        if not os.access(path, os.R_OK):
            raise UnsafeFileError(f"{path}: permission denied (this user cannot read it)")
    if limit is not None and size_bytes > limit:
        raise UnsafeFileError(f"{path}: the file is {format_size(size_bytes)}, over the {format_size(limit)} limit"
                              + (f"; {limit_hint}" if limit_hint else ""))
    return size_bytes


def _local_stat(path: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise UnsafeFileError(f"{path}: a symlink that leads nowhere (to {os.readlink(path)})") from None
        raise  # absence, as callers expect it (a cache not written yet)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(f"{path}: a symlink loop") from None
        raise UnsafeFileError(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(f"{path}: {file_kind(st.st_mode)}, not a regular file")
    return st


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words: "a FIFO (named pipe)", "a directory", ..."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def format_size(n: int) -> str:
    """Bytes in the largest binary unit that keeps a whole number in front: ``8.0 GiB``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def parse_size(text: str) -> int:
    """``"8GiB"``, ``"500MB"``, ``"1.5G"``, ``"1024"`` -> bytes (binary units); ``ValueError`` else."""
    units = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20, "mib": 2**20,
             "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40, "tib": 2**40}
    body = str(text).strip().lower()
    number = body.rstrip("kmgtib")
    scale = units.get(body[len(number):].strip())
    try:
        value = float(number) if number.strip() else -1.0
    except ValueError:
        value = -1.0
    if scale is None or not 0 < value < math.inf:
        raise ValueError(f"{text!r} is not a size: a positive number of bytes with an optional unit (8GiB, 500MB)")
    return int(value * scale)


def join(base: str, *parts: str) -> str:
    return posixpath.join(base, *parts) if is_url(base) else os.path.join(base, *parts)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_url(path) else os.path.basename(path.rstrip(os.sep))


def read_bytes(path: str, limit: int | None = None, limit_hint: str = "") -> bytes:
    """The whole file, checked first (``check_file``: a regular file, at most ``limit`` bytes)."""
    with open_checked(path, limit, limit_hint) as (handle, _):
        return handle.read()


@contextlib.contextmanager
def open_checked(path: str, limit: int | None = None, limit_hint: str = "") -> Iterator[tuple[BinaryIO, int]]:
    """``(binary file object, size)`` of the file, checked first (``check_file``) and opened for
    seeks and ranged reads (locally without blocking; through fsspec, the backend's own file)."""
    size_bytes = check_file(path, limit, limit_hint)
    if is_url(path):
        handle = _remote(path, lambda fs: fs.open(path, "rb"))
        with handle:
            yield handle, size_bytes
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise UnsafeFileError(f"{path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since the check
            raise UnsafeFileError(f"{path}: not a regular file")
        if limit is not None and st.st_size > limit:  # grown since the check
            raise UnsafeFileError(f"{path}: the file is {format_size(st.st_size)}, over the "
                                  f"{format_size(limit)} limit" + (f"; {limit_hint}" if limit_hint else ""))
        yield handle, st.st_size


def exists(path: str) -> bool:
    return _remote(path, lambda fs: fs.exists(path)) if is_url(path) else os.path.exists(path)


def lexists(path: str) -> bool:
    """Whether anything is at ``path``, a dangling or looping symlink included."""
    return exists(path) if is_url(path) else os.path.lexists(path)


def isdir(path: str) -> bool:
    return _remote(path, lambda fs: fs.isdir(path)) if is_url(path) else os.path.isdir(path)


def listdir(path: str) -> list[str]:
    """Entry names (not paths) in a directory, sorted; [] where it does not exist."""
    if is_url(path):
        return _remote(path, lambda fs: sorted(basename(p["name"]) for p in fs.ls(path, detail=True))
                       if fs.exists(path) else [])
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        if os.path.islink(path) and not os.path.exists(path):
            raise UnsafeFileError(f"{path}: a symlink that leads nowhere (to {os.readlink(path)})") from None
        return []
    except OSError as exc:  # a symlink loop, a directory this user may not list
        reason = "a symlink loop" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise UnsafeFileError(f"{path}: {reason}") from None


def find(path: str) -> list[str]:
    """Every file below ``path`` (recursive), as full paths or URLs."""
    if is_url(path):
        protocol = path.split("://", 1)[0]
        return [f if "://" in f else f"{protocol}://{f}" for f in _remote(path, lambda fs: fs.find(path))]
    return [os.path.join(root, f) for root, _, files in os.walk(path) for f in files]


def size(path: str) -> int:
    return int(_remote(path, lambda fs: fs.size(path))) if is_url(path) else os.path.getsize(path)


def mtime(path: str) -> float:
    return _stamp(_remote(path, lambda fs: fs.info(path))) if is_url(path) else os.path.getmtime(path)


def file_stats(directory: str) -> tuple[tuple[str, int, int], ...]:
    """``(name, size, mtime_ns)`` of each file in ``directory`` but dot-files (staged writes), sorted
    by name; () where it does not exist. From one listing: no file is opened. A rewritten, added or
    removed file changes it."""
    if is_url(directory):
        try:
            entries = _remote(directory, lambda fs: fs.ls(directory, detail=True))
        except FileNotFoundError:
            return ()
        return tuple(sorted((basename(e["name"]), int(e.get("size") or 0), int(_stamp(e) * 1e9))
                            for e in entries if e.get("type") != "directory" and not basename(e["name"]).startswith(".")))
    try:
        entries = [(e.name, e.stat()) for e in os.scandir(directory) if not e.name.startswith(".") and e.is_file()]
    except OSError:
        return ()
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in entries))


def _stamp(info: dict) -> float:
    """A remote file's modification time in seconds since the epoch, from its fsspec info: backends
    name it differently (mtime, updated, created) and give a number, a datetime or ISO text."""
    stamp = info.get("mtime") or info.get("updated") or info.get("created") or 0
    if hasattr(stamp, "timestamp"):
        return stamp.timestamp()
    if isinstance(stamp, str):
        from datetime import datetime

        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return float(stamp)


def makedirs(path: str) -> None:
    if is_url(path):
        _remote(path, lambda fs: fs.makedirs(path, exist_ok=True))
    else:
        os.makedirs(path, exist_ok=True)


def make_new_dir(path: str) -> bool:
    """Create the directory ``path`` (and its parents); False, creating nothing, if it exists
    (locally an atomic claim; through fsspec a check, then the creation)."""
    if is_url(path):
        if exists(path):
            return False
        makedirs(path)
        return True
    os.makedirs(os.path.dirname(path.rstrip(os.sep)) or ".", exist_ok=True)
    try:
        os.mkdir(path)
    except FileExistsError:
        return False
    return True


def write_bytes_atomic(path: str, data: bytes) -> None:
    """Write under a temporary name beside ``path``, then rename into place."""
    tmp = join(posixpath.dirname(path) if is_url(path) else os.path.dirname(path),
               f".{basename(path)}.{uuid.uuid4().hex[:8]}.tmp")
    if is_url(path):  # unbounded: an upload takes as long as its size needs
        import fsspec

        fs, _, _ = fsspec.get_fs_token_paths(path)
        with fs.open(tmp, "wb") as handle:
            handle.write(data)
        fs.mv(tmp, path)
        return
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def rename(src: str, dst: str) -> None:
    if is_url(src):
        _remote(src, lambda fs: fs.mv(src, dst, recursive=True))
    else:
        os.rename(src, dst)


def remove_tree(path: str) -> None:
    if is_url(path):
        _remote(path, lambda fs: fs.rm(path, recursive=True) if fs.exists(path) else None)
    else:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
