"""Turn a session id taken from a URL into a run directory, never into anything else.

Contract:
- ``listed_sessions(logdir)`` is ``session.list_sessions(logdir)`` without the runs that lead out
  of the logdir: for a local logdir, a run whose directory or any entry in it resolves, symlinks
  followed, to a place outside the logdir's profile root is not the dashboard's to show (nor to
  read for the listing's figures).
- ``resolve_run(logdir, run)`` returns the run directory of ``run`` only when ``run`` is the name
  of a session that ``listed_sessions(logdir)`` lists, either as given or percent-decoded once
  (a URL's path segment, as ``components.session_href`` encodes it): so any name a directory can
  have opens (spaces, Unicode, ``;``, ``%``), and nothing else does. Anything else raises
  ``RunNotFoundError`` whose message quotes the request in a printable form and never anything
  read from disk. ``..``, percent-encoded ``..`` (any number of times), absolute paths,
  separators, NUL bytes, dot-names (staged runs) and symlinks leading out of the logdir are all
  rejected, so a hostile URL can neither read a file nor probe for one.
"""
from __future__ import annotations

import os
from urllib.parse import unquote

from xlaprof.errors import RunNotFoundError, XlaprofError
from xlaprof.session import SessionSummary, list_sessions, profile_root, storage

MAX_RUN_ID_CHARS = 1024  # a directory name is at most 255 bytes; percent-encoded, three times that


def printable(text: object, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters with control characters escaped, for messages."""
    shown = repr(str(text))[1:-1]
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def is_plausible_run_name(run: object) -> bool:
    """Whether ``run`` could name a run at all, before looking at the disk: a string that, as
    given and decoded once, is one directory name (no separator, no NUL, not a dot-name)."""
    if not isinstance(run, str) or not run or len(run) > MAX_RUN_ID_CHARS:
        return False
    return all(name and "/" not in name and "\x00" not in name and not name.startswith(".")
               for name in (run, unquote(run)))


def listed_sessions(logdir: str) -> list[SessionSummary]:
    """The logdir's sessions (newest first) whose files all lie inside the logdir."""
    sessions = list_sessions(logdir)
    if storage.is_url(logdir):
        return sessions
    real_root = os.path.realpath(profile_root(logdir))
    return [s for s in sessions if _inside(real_root, s.path)]


def resolve_run(logdir: str, run: object) -> str:
    """The run directory of session ``run`` of ``logdir``; ``RunNotFoundError`` otherwise."""
    if is_plausible_run_name(run):
        listed = {s.run: s.path for s in listed_sessions(logdir)}
        for name in (run, unquote(run)):
            if name in listed:
                return listed[name]
    raise RunNotFoundError(f"no session named '{printable(run)}' in this logdir")


def _inside(real_root: str, run_dir: str) -> bool:
    """Whether every path the session would read resolves inside ``real_root`` (symlinks followed):
    the analysis reads files beside the captures too (a debug file)."""
    try:
        paths = [run_dir] + [os.path.join(run_dir, name) for name in storage.listdir(run_dir)]
    except XlaprofError:  # a run that cannot be listed is listed with its error, and reads nothing
        return os.path.commonpath([real_root, os.path.realpath(run_dir)]) == real_root
    return all(os.path.commonpath([real_root, os.path.realpath(p)]) == real_root for p in paths)
