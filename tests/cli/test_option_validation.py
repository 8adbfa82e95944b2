"""Every option and read-limit variable is checked before any work: one line and exit 2. Through the
real command, the values the issue found (``-d inf``, ports out of range, ``--indent 100000``, bad
environment variables, a ``--debug-file`` over the limit or of zeros); and hypothesis over the
parser: any text given to a numeric option is either a value within its rule or one line naming
the option."""
from __future__ import annotations

import contextlib
import io
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.capture import MAX_DURATION_S
from tests.support.synthetic import training_capture, write_session
from tests.support.workers import run_cli
from xlaprof import cli_options
from xlaprof.cli import build_parser


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> str:
    return write_session(str(tmp_path_factory.mktemp("logs")), "run", {"localhost_1": training_capture(steps=4)})


def _one_line(result) -> str:
    assert result.returncode == 2 and result.stdout == "", (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlaprof: error: ") and "Traceback" not in result.stderr, lines
    return lines[0]


@pytest.mark.parametrize("args,words", [
    (["capture", "-d", "inf"], "-d/--duration: 'inf': expected a finite number of seconds above 0"),
    (["capture", "-d", "1e9"], "-d/--duration: '1e9': at most 86400 seconds"),
    (["capture", "-p", "0"], "-p/--port: '0': expected a port from 1 to 65535"),
    (["capture", "--attempts", "0"], "--attempts: '0': expected a whole number, 1 or more"),
    (["dashboard", "--port", "99999"], "-p/--port: '99999': expected a port from 1 to 65535"),
    (["dashboard", "--port", "-1"], "-p/--port: '-1': expected a port from 1 to 65535"),
    (["demo", "-p", "99999"], "-p/--port: '99999': expected a port from 1 to 65535, or 0 for a free one"),
    (["demo", "--dashboard-port", "70000"], "--dashboard-port: '70000': expected a port from 1 to 65535"),
    (["analyze", "x", "--indent", "100000"], "--indent: '100000': expected spaces from 0 to 16"),
    (["analyze", "x", "--top", "-1"], "--top: '-1': expected a whole number, 0 or more"),
    (["analyze", "x", "--max-capture-size", "inf"], "--max-capture-size: 'inf' is not a size"),
    (["analyze", "x", "--remote-timeout", "nan"], "--remote-timeout: 'nan': expected a finite number of seconds"),
])
def test_a_bad_option_value_is_one_line_naming_the_option(args, words):
    line = _one_line(run_cli(*args, timeout=60))
    assert words in line and f"(see xlaprof {args[0]} --help)" in line, line


def test_demo_rejects_a_bad_duration_before_starting_a_worker(tmp_path):
    line = _one_line(run_cli("demo", "-d", "-1", "-o", str(tmp_path / "logs"), timeout=60))
    assert "-d/--duration: '-1'" in line and "torch_xla" not in line
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("variable,value,words", [
    ("XLAPROF_REMOTE_TIMEOUT", "abc", "XLAPROF_REMOTE_TIMEOUT='abc': expected seconds"),
    ("XLAPROF_REMOTE_TIMEOUT", "inf", "XLAPROF_REMOTE_TIMEOUT='inf': expected a finite number of seconds"),
    ("XLAPROF_MAX_CAPTURE_SIZE", "lots", "XLAPROF_MAX_CAPTURE_SIZE: 'lots' is not a size"),
])
def test_a_bad_read_limit_variable_is_rejected_before_any_work(session, variable, value, words):
    """Even for a local session, which never reads remotely: a bad value is never ignored."""
    line = _one_line(run_cli("analyze", session, env=dict(os.environ, **{variable: value}), timeout=60))
    assert words in line, line


def test_a_debug_file_over_the_limit_or_of_zeros_is_one_line(session, tmp_path):
    zeros = tmp_path / "debug.txt"
    with open(zeros, "wb") as handle:
        handle.truncate(2**30)  # sparse: 1 GiB of zeros
    line = _one_line(run_cli("analyze", session, "--debug-file", str(zeros), "--max-capture-size", "1MiB",
                             timeout=60))
    assert line == (f"xlaprof: error: {zeros}: the file is 1.0 GiB, over the 1.0 MiB limit; raise the limit with "
                    f"--max-capture-size SIZE (or XLAPROF_MAX_CAPTURE_SIZE)")
    line = _one_line(run_cli("analyze", session, "--debug-file", str(zeros), timeout=60))
    assert line == f"xlaprof: error: {zeros}: binary data, not a PT_XLA_DEBUG_FILE (a text file)"
    line = _one_line(run_cli("analyze", session, "--debug-file", str(tmp_path / "none.txt"), timeout=60))
    assert "none.txt: no such file (--debug-file)" in line


# option -> (a command line holding it, the rule a parsed value keeps)
RULES = {
    "--duration": (["capture"], lambda v: math.isfinite(v) and 0 < v <= MAX_DURATION_S),
    "--port": (["dashboard"], lambda v: 1 <= v <= 65535),
    "--dashboard-port": (["demo"], lambda v: 1 <= v <= 65535),
    "--indent": (["analyze", "x"], lambda v: 0 <= v <= cli_options.MAX_INDENT),
    "--top": (["diff", "a", "b"], lambda v: v >= 0),
    "--jobs": (["analyze", "x"], lambda v: v >= 1),
    "--max-concurrent": (["capture"], lambda v: v >= 1),
    "--remote-timeout": (["analyze", "x"], lambda v: math.isfinite(v) and v > 0),
}
NUMBERISH = st.one_of(st.integers(-2**70, 2**70).map(str), st.floats(allow_nan=True).map(repr),
                      st.sampled_from(["inf", "-inf", "nan", "1e400", "0x10", "", " 5", "5s", "1_000", "½"]),
                      st.text(max_size=12))


@settings(max_examples=400, deadline=None)
@given(option=st.sampled_from(sorted(RULES)), text=NUMBERISH)
def test_any_text_for_a_numeric_option_is_a_valid_value_or_one_line(option, text):
    command, rule = RULES[option]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            args = build_parser().parse_args([*command, f"{option}={text}"])
        except SystemExit as stop:
            assert stop.code == 2
            lines = err.getvalue().splitlines()
            assert len(lines) == 1 and lines[0].startswith("xlaprof: error: ") and option in lines[0], lines
            return
    value = getattr(args, option.lstrip("-").replace("-", "_"))
    assert rule(value), (option, text, value)


@pytest.mark.parametrize("duration", [math.inf, math.nan, 0.0, MAX_DURATION_S * 2])
def test_the_capture_api_rejects_a_duration_the_profiler_cannot_take(tmp_path, duration):
    from collectors.capture import WorkerAddress, capture_session
    from xlaprof.errors import XlaprofError

    with pytest.raises(XlaprofError, match="--duration must be positive seconds, at most 86400"):
        capture_session([WorkerAddress("localhost", 9)], duration_s=duration, logdir=str(tmp_path))
    assert os.listdir(tmp_path) == []
