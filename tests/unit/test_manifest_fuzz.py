"""The manifest fuzzed: any JSON in ``xlaprof.json``, the fields xlaprof reads given any value. The
only outcomes are a manifest every reader can use or ``BadProfileError`` naming the file, and
the listing, ``Session.open`` and the index never raise anything else (one bad run never hides
the others)."""
from __future__ import annotations

import json
import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from xlaprof.errors import BadProfileError
from xlaprof.session import Session, list_sessions, profile_root, read_manifest

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=12)
SESSION_FIELDS = ["format", "run", "created_unix", "kind", "duration_s", "versions", "steps", "status", "workers"]
WORKER_FIELDS = ["address", "host", "port", "file", "status", "error", "events", "metrics", "capture_s", "attempts"]
WORKER = st.dictionaries(st.sampled_from(WORKER_FIELDS), JSON | st.sampled_from(["ok", "failed", "w_1.xplane.pb"]),
                         max_size=6)
MANIFEST = (st.dictionaries(st.sampled_from(SESSION_FIELDS), JSON | st.lists(WORKER, max_size=3), max_size=6)
            | JSON)


def _check(text: str) -> None:
    with tempfile.TemporaryDirectory() as logdir:
        run_dir = os.path.join(profile_root(logdir), "run")
        os.makedirs(run_dir)
        with open(os.path.join(run_dir, "w_1.xplane.pb"), "wb") as handle:
            handle.write(b"\x00")
        with open(os.path.join(run_dir, "xlaprof.json"), "w") as handle:
            handle.write(text)
        try:
            manifest = read_manifest(run_dir)
        except BadProfileError as exc:
            assert "xlaprof.json" in str(exc) and "\n" not in str(exc)
            manifest = None
        (listed,) = list_sessions(logdir)  # never raises, whatever the manifest
        assert isinstance(listed.created_unix, float)
        if manifest is None:
            assert listed.error is not None
            return
        assert listed.error is None
        session = Session.open(run_dir)  # every field a reader uses has its type
        assert [w.name for w in session.workers] == ["w_1"]
        assert all(isinstance(w.label, str) for w in session.workers)


@settings(max_examples=100, deadline=None)
@given(MANIFEST)
def test_fuzz_manifest_fields(manifest):
    _check(json.dumps(manifest))


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=64))
def test_fuzz_manifest_text(text):
    _check(text)
