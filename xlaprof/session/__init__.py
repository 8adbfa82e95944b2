"""Sessions on disk and in memory: the layout, the manifest, storage, and the ``Session`` model.

``from xlaprof.session import Session`` is the entry point; the modules:
``storage`` (local paths and fsspec URLs), ``manifest`` (``xlaprof.json``), ``layout`` (where runs
and their files live, ``list_sessions``), ``model`` (``Session``, ``Worker``, ``newest_readable``: the one rule for a logdir's bad runs).
"""
from __future__ import annotations

from xlaprof.session.layout import (
                                    DEBUG_FILE_SUFFIX,
                                    XPLANE_SUFFIX,
                                    SessionSummary,
                                    list_sessions,
                                    new_run_name,
                                    profile_root,
                                    worker_file_name,
)
from xlaprof.session.manifest import MANIFEST_NAME, read_manifest, write_manifest
from xlaprof.session.model import Session, Worker, newest_readable

__all__ = ["Session", "Worker", "SessionSummary", "list_sessions", "new_run_name", "profile_root",
           "worker_file_name", "read_manifest", "write_manifest", "MANIFEST_NAME", "XPLANE_SUFFIX",
           "DEBUG_FILE_SUFFIX", "newest_readable"]
