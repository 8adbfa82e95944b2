"""Turn a session id taken from a URL into a run directory, never into anything else.

Contract: ``resolve_run(logdir, run)`` returns the run directory of ``run`` only when ``run`` is
the name of a session that ``session.list_sessions(logdir)`` lists, and (for a local logdir)
the directory and every entry in it resolve, symlinks followed, to a place inside the
logdir's profile root. Anything else raises ``RunNotFoundError`` whose message quotes the
request in a printable form and never anything read from disk. ``..``, percent-encoded
``..`` (any number of times), absolute paths, separators, NUL bytes and symlinks leading out of
the logdir are all rejected, so a hostile URL can neither read a file nor probe for one.
"""
from __future__ import annotations

import os
import re
from urllib.parse import unquote

from xlaprof.errors import RunNotFoundError
from xlaprof.session import list_sessions, profile_root, storage

# The run names xlaprof writes (session.new_run_name); TensorBoard's are a subset.
_RUN_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,200}")
# Percent-decoding is applied until the text stops changing, at most this many times.
_MAX_UNQUOTE_ROUNDS = 4


def printable(text: object, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters with control characters escaped, for messages."""
    shown = repr(str(text))[1:-1]
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def is_plausible_run_name(run: object) -> bool:
    """Whether ``run`` could be a run name at all, before looking at the disk."""
    if not isinstance(run, str):
        return False
    decoded = run
    for _ in range(_MAX_UNQUOTE_ROUNDS):
        again = unquote(decoded)
        if again == decoded:
            break
        decoded = again
    # A name that still decodes to something else is an encoding game, not a run name.
    if decoded != run or unquote(decoded) != decoded:
        return False
    return bool(_RUN_NAME.fullmatch(run)) and not run.startswith(".") and run not in (".", "..")


def resolve_run(logdir: str, run: object) -> str:
    """The run directory of session ``run`` of ``logdir``; ``RunNotFoundError`` otherwise."""
    if not is_plausible_run_name(run):
        raise RunNotFoundError(f"no session named '{printable(run)}' in this logdir")
    listed = {s.run: s.path for s in list_sessions(logdir)}
    if run not in listed:
        raise RunNotFoundError(f"no session named '{printable(run)}' in this logdir")
    run_dir = listed[run]
    if not storage.is_url(run_dir):
        _check_inside(profile_root(logdir), run_dir, run)
    return run_dir


def _check_inside(root: str, run_dir: str, run: str) -> None:
    """Every path the session would read must resolve inside ``root`` (symlinks followed)."""
    real_root = os.path.realpath(root)
    # Every entry, not only captures: the analysis also reads files beside them (a debug file).
    paths = [run_dir] + [os.path.join(run_dir, name) for name in storage.listdir(run_dir)]
    for path in paths:
        real = os.path.realpath(path)
        if os.path.commonpath([real_root, real]) != real_root:
            raise RunNotFoundError(f"no session named '{printable(run)}' in this logdir "
                                   f"(it leads outside the logdir)")
