"""The command line's option values and environment, checked before any work starts.

Contract:
- Option types for argparse, each rejecting a bad value with a sentence saying what is expected:
  ``duration`` (seconds to record: finite, above 0, at most the capture's ``MAX_DURATION_S``), ``seconds``
  (finite, above 0), ``port`` (1-65535), ``port_or_free`` (0-65535, 0: a free one), ``positive``
  (a whole number, 1 or more), ``count`` (0 or more), ``indent`` (0 to ``MAX_INDENT``), ``size``
  (``8GiB``, ``500MB``: ``storage.parse_size``).
- ``OneLineParser``: an ``argparse.ArgumentParser`` whose usage errors are one line on stderr,
  ``xlaprof: error: <command>: <problem> (see xlaprof <command> --help)``, and exit code 2.
- ``check_before_work(args)``: the environment variables the read limits travel in
  (``XLAPROF_MAX_CAPTURE_SIZE``, ``XLAPROF_REMOTE_TIMEOUT``) checked as their options are, so a bad
  value is one line (``XlaprofError`` naming the variable) before any work, never ignored; and the
  file ``--debug-file`` names checked as a capture is (regular, readable, within the size limit).
"""
from __future__ import annotations

import argparse
import math

from xlaprof.errors import XlaprofError

MAX_INDENT = 16  # spaces per JSON level; more only multiplies the output (--indent 100000: 2 GB)


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line naming the command and its ``--help``; exit 2."""

    def error(self, message: str) -> None:
        command = self.prog.replace("xlaprof", "", 1).strip()
        where = f"{command}: " if command else ""
        self.exit(2, f"xlaprof: error: {where}{message} (see {self.prog} --help)\n")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def seconds(text: str) -> float:
    value = _number(text)
    if value is None or not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number of seconds above 0")
    return value


def duration(text: str) -> float:
    # The capture's own bound, said here before a demo starts its worker.
    from collectors.capture import MAX_DURATION_S

    value = seconds(text)
    if value > MAX_DURATION_S:
        raise argparse.ArgumentTypeError(f"{text!r}: at most {MAX_DURATION_S:g} seconds (a day)")
    return value


def _whole(text: str, low: int, high: int | None, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
    return value


def port(text: str) -> int:
    return _whole(text, 1, 65535, "a port from 1 to 65535")


def port_or_free(text: str) -> int:
    return _whole(text, 0, 65535, "a port from 1 to 65535, or 0 for a free one")


def positive(text: str) -> int:
    return _whole(text, 1, None, "a whole number, 1 or more")


def count(text: str) -> int:
    return _whole(text, 0, None, "a whole number, 0 or more")


def indent(text: str) -> int:
    return _whole(text, 0, MAX_INDENT, f"spaces from 0 to {MAX_INDENT}")


def size(text: str) -> str:
    from xlaprof.session.storage import parse_size

    try:
        parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def check_before_work(args) -> None:
    """Raise ``XlaprofError`` (one line) for a bad read-limit variable (naming it) or a file an
    option names (``--debug-file``) that must not be read: missing, not a regular file, or over
    the capture size limit (the same message and flag as a capture's)."""
    from xlaprof.session import storage
    from xlaprof.session.model import CAPTURE_SIZE_HINT, capture_size_limit

    limit = capture_size_limit()
    storage.remote_timeout_s()
    path = getattr(args, "debug_file", None)
    if path:
        try:
            storage.check_file(path, limit, CAPTURE_SIZE_HINT)
        except FileNotFoundError:
            raise XlaprofError(f"{path}: no such file (--debug-file)") from None
