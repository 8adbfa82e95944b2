"""The session manifest, ``xlaprof.json``: what a capture knows about itself beside its profiles.

Contract: ``read_manifest(run_dir)`` returns the manifest as a dict (``{}`` when the run has none,
e.g. a TensorBoard run captured by another tool) and raises ``BadProfileError`` with one line when
it is not a JSON object, is nested deeper than JSON allows here, is larger than
``MAX_MANIFEST_BYTES``, is not a regular file (``storage.check_file``), or when any field xlaprof
reads has the wrong type or value (``check_manifest``: the line names the field, e.g.
``workers[2].port``). Fields it does not know are kept and never checked (newer manifests).
``write_manifest(run_dir, manifest)`` writes it atomically, stamped with ``MANIFEST_FORMAT``.
Captures write it last, so a run with a manifest is whole. ``WorkerStatus`` and
``CaptureStatus`` are the statuses it records.
"""
from __future__ import annotations

import json
import math
from enum import Enum

from xlaprof.errors import BadProfileError
from xlaprof.session import storage

MANIFEST_NAME = "xlaprof.json"
MANIFEST_FORMAT = 1
MAX_MANIFEST_BYTES = 64 * 2**20  # a manifest of hundreds of workers with their metrics is a few MB


def read_manifest(run_dir: str) -> dict:
    path = storage.join(run_dir, MANIFEST_NAME)
    if not storage.lexists(path):
        return {}
    data = storage.read_bytes(path, MAX_MANIFEST_BYTES)
    try:
        manifest = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadProfileError(f"{path}: the manifest is not valid JSON ({exc})") from None
    except RecursionError:
        raise BadProfileError(f"{path}: the manifest is nested too deeply to be a manifest") from None
    if not isinstance(manifest, dict):
        raise BadProfileError(f"{path}: the manifest is not a JSON object")
    problem = check_manifest(manifest)
    if problem:
        raise BadProfileError(f"{path}: the manifest's {problem}")
    return manifest


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value) -> bool:
    return isinstance(value, str)


def _optional(test):
    return lambda value: value is None or test(value)


def _one_of(enum: type[Enum]):
    values = {e.value for e in enum}
    return lambda value: isinstance(value, str) and value in values


# The fields xlaprof reads, each with its test and what it must be (said in the error).
_SESSION_FIELDS = {
    "format": (_integer, "an integer"),
    "run": (_text, "a string"),
    "created_unix": (lambda v: _number(v) and v >= 0, "seconds since the epoch (a number)"),
    "kind": (_text, "a string"),
    "duration_s": (lambda v: _number(v) and v >= 0, "seconds (a number)"),
    "versions": (lambda v: isinstance(v, dict) and all(_text(x) for x in v.values()),
                 "an object of version strings"),
    "steps": (lambda v: isinstance(v, list) and len(v) == 2 and all(_integer(x) for x in v),
              "[first, stop] step numbers"),
    "status": (lambda v: _one_of(CaptureStatus)(v), "'complete' or 'partial'"),
    "workers": (lambda v: isinstance(v, list), "a list of workers"),
}
_WORKER_FIELDS = {
    "address": (_text, "a string"),
    "host": (lambda v: _text(v) and v != "", "a host name"),
    "port": (_optional(lambda v: _integer(v) and 0 <= v < 2**32), "a port number or null"),
    "file": (_optional(_text), "a file name or null"),
    "status": (_optional(lambda v: _one_of(WorkerStatus)(v)), "'ok', 'failed' or null"),
    "error": (_optional(_text), "a string or null"),
    "events": (lambda v: _integer(v) and v >= 0, "an event count"),
    "metrics": (_optional(lambda v: isinstance(v, dict)), "an object or null"),
    "capture_s": (lambda v: _number(v) and v >= 0, "seconds (a number)"),
    "attempts": (lambda v: _integer(v) and v >= 0, "a count"),
}


def check_manifest(manifest: dict) -> str | None:
    """The first field of ``manifest`` that xlaprof cannot use, said as ``field: must be ...``;
    None when every known field is well-formed."""
    problem = _check_fields(manifest, _SESSION_FIELDS, "")
    if problem:
        return problem
    for i, worker in enumerate(manifest.get("workers") or []):
        if not isinstance(worker, dict):
            return f"workers[{i}]: must be an object, not {_shown(worker)}"
        problem = _check_fields(worker, _WORKER_FIELDS, f"workers[{i}].")
        if problem:
            return problem
    return None


def _check_fields(data: dict, fields: dict, prefix: str) -> str | None:
    for name, (test, expected) in fields.items():
        if name in data and not test(data[name]):
            return f"{prefix}{name}: must be {expected}, not {_shown(data[name])}"
    return None


def _shown(value) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float, bool)) or value is None else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


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
