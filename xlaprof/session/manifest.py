"""The session manifest, ``xlaprof.json``: what a capture knows about itself beside its profiles.

Contract: ``read_manifest(run_dir)`` returns the manifest as a dict (``{}`` when the run has none,
e.g. a TensorBoard run captured by another tool) and raises ``BadProfileError`` with one line when
it is not a JSON object. ``write_manifest(run_dir, manifest)`` writes it atomically, stamped with
``MANIFEST_FORMAT``. Captures write it last, so a run with a manifest is whole. ``WorkerStatus``
and ``CaptureStatus`` are the statuses it records.
"""
from __future__ import annotations

import json
from enum import Enum

from xlaprof.errors import BadProfileError
from xlaprof.session import storage

MANIFEST_NAME = "xlaprof.json"
MANIFEST_FORMAT = 1


def read_manifest(run_dir: str) -> dict:
    path = storage.join(run_dir, MANIFEST_NAME)
    if not storage.exists(path):
        return {}
    try:
        manifest = json.loads(storage.read_bytes(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadProfileError(f"{path}: the manifest is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise BadProfileError(f"{path}: the manifest is not a JSON object")
    return manifest


def write_manifest(run_dir: str, manifest: dict) -> None:
    manifest = {"format": MANIFEST_FORMAT, **manifest}
    storage.write_bytes_atomic(storage.join(run_dir, MANIFEST_NAME),
                               json.dumps(manifest, indent=2, sort_keys=True).encode())


class WorkerStatus(str, Enum):
    """A worker's outcome in a capture, as the manifest records it."""

    OK = "ok"
    FAILED = "failed"


class CaptureStatus(str, Enum):
    """A capture's outcome: every worker captured, or only some."""

    COMPLETE = "complete"
    PARTIAL = "partial"
