"""The public API as a person meets it in a REPL: what ``dir(xlaprof)`` lists, what ``help`` says,
and that a session opened without reading its captures can be analysed."""
from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import xlaprof
from xlaprof.errors import XlaprofError
from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.session import Session

API = ("start_server", "trace", "step", "profile", "Session", "analyze", "AnalysisConfig")


def test_dir_lists_the_api_without_importing_torch():
    code = "import sys, xlaprof; print(dir(xlaprof)); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    listed = set(eval(out[0]))  # noqa: S307 - our own printed list
    assert set(API) <= listed and "__version__" in listed
    assert not listed & {"importlib", "annotations", "TYPE_CHECKING", "_LAZY"}  # the facade's machinery
    assert out[1] == "False"


def test_every_api_name_is_documented_with_its_arguments():
    for name in API:
        doc = inspect.getdoc(getattr(xlaprof, name)) or ""
        assert len(doc) > 80, name
    for name, words in (("start_server", ("port", "Raises")), ("trace", ("name", "meta")), ("step", ("n", "name")),
                        ("profile", ("logdir", "path")), ("analyze", ("session", "Raises"))):
        doc = inspect.getdoc(getattr(xlaprof, name))
        assert all(w in doc for w in words), (name, words)
    assert "Raises" in inspect.getdoc(Session.load) and "path" in inspect.getdoc(Session.load)


def test_a_session_opened_but_not_read_is_analysed(tmp_path):
    run = write_session(str(tmp_path), "run", {"localhost_9012": training_capture(steps=5, devices=1)})
    opened = Session.open(run)
    assert not opened.is_read
    result = analyze(opened)
    assert opened.is_read and result.idle_us > 0
    assert result.idle_us == analyze(Session.load(run)).idle_us


@pytest.mark.parametrize("steps", [range(0), range(0, 10, 2), [0, 1, 2], 5])
def test_profile_steps_must_be_a_range_of_consecutive_steps(steps):
    with pytest.raises(XlaprofError, match="give the steps to record as a non-empty range"):
        xlaprof.profile("logs", steps=steps)
