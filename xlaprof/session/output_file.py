"""Files the user names as outputs (``xlaprof export -o``): written whole, never over an input.

Contract:
- ``STDOUT`` (``"-"``) names the standard output.
- ``check_output_file(path, inputs)`` returns the file that will be replaced or created (``path``
  with its symlinks resolved), or raises ``XlaprofError`` with one line, before any work, when
  ``path``: is empty or a URL (outputs are local files); lies in no existing directory; is anything
  but a regular file or a new name (a directory, a FIFO, a device, a socket); is one of ``inputs``
  (the same file, through symlinks and hard links); lies inside an input directory that is a
  session (a directory holding no ``plugins/profile``), or inside any ``plugins/profile`` (where a
  logdir keeps its captures and manifests).
- ``write_output_file(path, write, inputs)`` checks again, then calls ``write(binary file)`` on a
  temporary file beside the target and renames it onto the target only when ``write`` returned and
  the target is still a regular file or absent: the target is replaced by a whole output or left as
  it was. Whatever fails, the temporary file is removed; an ``OSError`` (a full disk, a read-only
  directory) becomes one line naming ``path`` (never the temporary name). With ``STDOUT``,
  ``write`` gets the standard output's binary stream.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import BinaryIO

from xlaprof.errors import XlaprofError
from xlaprof.session import storage

STDOUT = "-"
_PROFILE_DIRS = ("plugins", "profile")  # a logdir's runs live below these (TensorBoard's layout)


def check_output_file(path: str, inputs: Iterable[str | None] = ()) -> str:
    if path == STDOUT:
        return path
    if not path:
        raise XlaprofError("an empty output path: give the file to write (or - for the standard output)")
    if storage.is_url(path):
        raise XlaprofError(f"{path}: outputs are written to local files, not URLs")
    target = os.path.realpath(path)
    if not os.path.isdir(os.path.dirname(target)):
        raise XlaprofError(f"{path}: its directory does not exist")
    if os.path.lexists(target):
        if not os.path.exists(target):
            raise XlaprofError(f"{path}: a symlink loop: refusing to write through it")
        mode = os.stat(target).st_mode
        if stat.S_ISDIR(mode):
            raise XlaprofError(f"{path} is a directory: give the file to write")
        if not stat.S_ISREG(mode):
            raise XlaprofError(f"{path}: {storage.file_kind(mode)}, not a regular file: refusing to replace it")
    given = [p for p in inputs if p and not storage.is_url(p) and os.path.exists(p)]
    for source in given:
        if os.path.exists(target) and os.path.samefile(target, source):
            raise XlaprofError(f"{path}: the same file as the input {source}: refusing to overwrite it")
    parts = target.split(os.sep)
    if any(tuple(parts[i:i + 2]) == _PROFILE_DIRS for i in range(len(parts) - 1)):
        raise XlaprofError(f"{path}: inside a logdir's plugins/profile, where its captures are: "
                           f"refusing to write there")
    for source in filter(os.path.isdir, given):
        session = os.path.realpath(source)  # a logdir's sessions are in plugins/profile, checked above
        if not os.path.isdir(os.path.join(session, *_PROFILE_DIRS)) and \
                os.path.commonpath([session, target]) == session:
            raise XlaprofError(f"{path}: inside the input session {source}: refusing to write among its files")
    return target


def write_output_file(path: str, write: Callable[[BinaryIO], object], inputs: Iterable[str | None] = ()) -> None:
    inputs = list(inputs)
    target = check_output_file(path, inputs)
    if target == STDOUT:
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    staged = None
    try:
        fd, staged = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".partial",
                                      dir=os.path.dirname(target))
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(staged, 0o644)  # mkstemp's 0600 is for the staging only
        check_output_file(path, inputs)  # still a regular file or a new name, now that the output is whole
        os.replace(staged, target)
        staged = None
    except OSError as exc:
        raise XlaprofError(f"{path}: {exc.strerror or exc} (nothing written)") from None
    finally:
        if staged is not None:
            os.unlink(staged)
