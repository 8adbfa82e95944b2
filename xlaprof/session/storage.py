"""File access for logdirs that may be local paths or fsspec URLs (``gs://``, ``memory://``, ...).

Contract: every function takes a path string; a string with ``://`` goes through fsspec (whose
backend for that scheme must be installed), anything else through the local filesystem.
``write_bytes_atomic`` never leaves a half-written file under the final name.
"""
from __future__ import annotations

import os
import posixpath
import uuid


def is_url(path: str) -> bool:
    return "://" in str(path)


def _fs(path: str):
    import fsspec

    fs, _, _ = fsspec.get_fs_token_paths(path)
    return fs


def join(base: str, *parts: str) -> str:
    return posixpath.join(base, *parts) if is_url(base) else os.path.join(base, *parts)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_url(path) else os.path.basename(path.rstrip(os.sep))


def read_bytes(path: str) -> bytes:
    if is_url(path):
        with _fs(path).open(path, "rb") as handle:
            return handle.read()
    with open(path, "rb") as handle:
        return handle.read()


def exists(path: str) -> bool:
    return _fs(path).exists(path) if is_url(path) else os.path.exists(path)


def isdir(path: str) -> bool:
    return _fs(path).isdir(path) if is_url(path) else os.path.isdir(path)


def listdir(path: str) -> list[str]:
    """Entry names (not paths) in a directory, sorted; [] where it does not exist."""
    if is_url(path):
        fs = _fs(path)
        if not fs.exists(path):
            return []
        return sorted(basename(p["name"]) for p in fs.ls(path, detail=True))
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []


def find(path: str) -> list[str]:
    """Every file below ``path`` (recursive), as full paths or URLs."""
    if is_url(path):
        fs = _fs(path)
        protocol = path.split("://", 1)[0]
        return [f if "://" in f else f"{protocol}://{f}" for f in fs.find(path)]
    return [os.path.join(root, f) for root, _, files in os.walk(path) for f in files]


def size(path: str) -> int:
    return int(_fs(path).size(path)) if is_url(path) else os.path.getsize(path)


def mtime(path: str) -> float:
    return _stamp(_fs(path).info(path)) if is_url(path) else os.path.getmtime(path)


def file_stats(directory: str) -> tuple[tuple[str, int, int], ...]:
    """``(name, size, mtime_ns)`` of each file in ``directory`` but dot-files (staged writes), sorted
    by name; () where it does not exist. From one listing: no file is opened. A rewritten, added or
    removed file changes it."""
    if is_url(directory):
        fs = _fs(directory)
        try:
            entries = fs.ls(directory, detail=True)
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
        _fs(path).makedirs(path, exist_ok=True)
    else:
        os.makedirs(path, exist_ok=True)


def make_new_dir(path: str) -> bool:
    """Create the directory ``path`` (and its parents); False, creating nothing, if it exists
    (locally an atomic claim; through fsspec a check, then the creation)."""
    if is_url(path):
        fs = _fs(path)
        if fs.exists(path):
            return False
        fs.makedirs(path, exist_ok=True)
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
    if is_url(path):
        fs = _fs(path)
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
        _fs(src).mv(src, dst, recursive=True)
    else:
        os.rename(src, dst)


def remove_tree(path: str) -> None:
    if is_url(path):
        fs = _fs(path)
        if fs.exists(path):
            fs.rm(path, recursive=True)
    else:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
