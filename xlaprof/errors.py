"""User-facing errors: one clear line for the person at the terminal, exit code 2 from the CLI.

Contract: every failure caused by the user's input or environment (a missing path, a corrupt
profile, an unreachable worker, a missing optional dependency) is raised as an ``XlaprofError``
subclass whose message is a complete sentence naming the thing at fault. Anything else escaping
the CLI is a bug in xlaprof.
"""
from __future__ import annotations


class XlaprofError(Exception):
    """A problem with the user's input or environment, explained in one line."""


class BadProfileError(XlaprofError):
    """A capture file that cannot be read as an XSpace."""


class SessionNotFoundError(XlaprofError):
    """A path that holds no xlaprof/XProf session."""


class CaptureError(XlaprofError):
    """A capture that produced nothing usable."""


class SessionLoadError(XlaprofError):
    """A session that could not be read or analysed (the dashboard shows it in the session's place)."""


class RunNotFoundError(SessionNotFoundError):
    """A session id from a request that names no session of this logdir."""


class MissingExtraError(XlaprofError):
    """An optional dependency that a feature needs is not installed."""

    def __init__(self, feature: str, module: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the '{module}' package, which is not installed: "
            f"run  pip install 'xlaprof[{extra}]'")


class UnsafeFileError(BadProfileError):
    """A path that must not be opened for reading: not a regular file (a FIFO, a device, a
    directory), a symlink that loops or leads nowhere, an unreadable file, or one over a size limit."""


class StorageTimeoutError(XlaprofError):
    """A remote logdir (an fsspec URL) that did not answer within the configured time."""


class ClusterError(XlaprofError):
    """A Dask cluster that could not run an analysis (unreachable, silent, no worker left, its
    workers killed): the session is not at fault, so this is never kept as the session's error."""
