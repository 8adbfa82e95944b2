"""The public API as a person meets it in a REPL: what ``dir(xlaprof)`` lists, what ``help`` says,
and that a session opened without reading its captures can be analysed."""
from __future__ import annotations

import importlib.metadata
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import xlaprof
from collectors import stack_sampler
from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.errors import XlaprofError
from xlaprof.session import Session

REPO = Path(__file__).resolve().parents[2]
API = ("start_server", "trace", "step", "profile", "Session", "analyze", "AnalysisConfig")


def test_dir_lists_the_api_without_importing_torch():
    code = "import sys, xlaprof; print(dir(xlaprof)); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    listed = set(eval(out[0]))  # noqa: S307 - our own printed list
    assert set(API) <= listed and "__version__" in listed
    assert not listed & {"importlib", "annotations", "TYPE_CHECKING", "_LAZY", "_version"}  # the facade's machinery
    assert out[1] == "False"


def test_every_api_name_is_documented_with_its_arguments():
    for name in API:
        doc = inspect.getdoc(getattr(xlaprof, name)) or ""
        assert len(doc) > 80, name
    for name, words in (("start_server", ("port", "stack_hz", "per second", "Raises")), ("trace", ("name", "meta")), ("step", ("n", "name")),
                        ("profile", ("logdir", "path", "stack_hz", "per second")), ("analyze", ("session", "Raises"))):
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


@pytest.mark.parametrize("stack_hz", [-1, 10_001, 1e9, float("nan"), "1000", True, None])
def test_stack_hz_must_be_a_rate_from_0_to_10000(stack_hz):
    for call in (lambda: xlaprof.profile("logs", stack_hz=stack_hz), lambda: xlaprof.start_server(0, stack_hz=stack_hz)):
        with pytest.raises(XlaprofError, match=r"^stack_hz=.*: give the Python stack sampling rate in samples per "
                                               r"second, from 0 \(off\) to 10000$"):
            call()


def test_stack_hz_accepts_off_and_the_default():
    assert xlaprof.profile("logs", stack_hz=0).stack_hz == 0
    assert xlaprof.profile("logs").stack_hz == stack_sampler.DEFAULT_RATE_HZ == inspect.signature(xlaprof.start_server).parameters[
        "stack_hz"].default


def test_the_version_is_written_once():
    """xlaprof/_version.py is the one source: the package metadata reads it, every module imports it."""
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and not re.search(r"^version\s*=\s*\"", pyproject, re.M)
    assert 'version = {attr = "xlaprof._version.__version__"}' in pyproject
    written = [str(p.relative_to(REPO)) for package in ("xlaprof", "collectors", "dashboard")
               for p in (REPO / package).rglob("*.py") if re.search(r"^__version__\s*=", p.read_text(), re.M)]
    assert written == ["xlaprof/_version.py"]
    assert xlaprof.__version__ == importlib.metadata.version("xlaprof")
