"""The notebook API: ``xlaprof.analyze(path)`` on a session directory, a logdir or one capture file;
every table of the result as a pandas DataFrame with as many rows as the analysis holds; a clear
message without pandas; the result's short HTML summary; and a repr of a few lines (under 2 KB) for
every result object."""
from __future__ import annotations

import glob
import os
import sys
from dataclasses import fields, is_dataclass

import pytest

import xlaprof
from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis.common.tables import Table
from xlaprof.analysis.compare.session_diff import diff_sessions
from xlaprof.errors import MissingExtraError, SessionNotFoundError

TABLES = ("gaps", "findings", "idle_by_line", "steps", "graphs", "ops", "compiles")


@pytest.fixture(scope="module")
def session_dir(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("logdir"))
    return write_session(logdir, "run", {"localhost_9012": training_capture(
        steps=12, devices=2, read_every=1, recompile_every=4, sampled=True)})


def test_analyze_takes_a_session_directory_a_logdir_or_a_capture_file(session_dir):
    logdir = os.path.dirname(os.path.dirname(os.path.dirname(session_dir)))
    (capture,) = glob.glob(os.path.join(session_dir, "*.xplane.pb"))
    results = [xlaprof.analyze(p) for p in (session_dir, logdir, capture)]
    assert results[0].idle_us > 0 and len({r.idle_us for r in results}) == 1
    with pytest.raises(SessionNotFoundError):
        xlaprof.analyze(os.path.join(logdir, "nothing-here"))


def test_every_table_is_a_dataframe_of_the_analysis(session_dir):
    result = xlaprof.analyze(session_dir)
    frames = {name: getattr(result, name).to_pandas() for name in TABLES}
    gaps = frames["gaps"]
    assert len(gaps) == result.gap_count and gaps["dur_us"].sum() == pytest.approx(result.idle_us)
    assert gaps.groupby("cause")["dur_us"].sum().to_dict() == pytest.approx(
        {c: us for c, us in result.idle_by_cause.items() if us > 0})
    assert list(frames["findings"]["kind"]) == [f.kind.value for f in result.findings]
    assert len(frames["idle_by_line"]) == len(result.idle_by_line) > 0
    assert len(frames["steps"]) == sum(len(w.steps) for w in result.workers) == 12
    assert len(frames["compiles"]) == result.compiles.count == 3
    assert len(frames["graphs"]) == len(result.device_profile.graphs)
    assert len(frames["ops"]) == sum(len(g.ops) for g in result.device_profile.graphs)
    assert result.findings[0] is list(result.findings)[0]  # still the list it was


def test_an_empty_table_keeps_its_columns():
    frame = Table(columns=("worker", "program_id", "module")).to_pandas()
    assert list(frame.columns) == ["worker", "program_id", "module"] and frame.empty


def test_without_pandas_a_dataframe_asks_for_the_extra(session_dir, monkeypatch):
    result = xlaprof.analyze(session_dir)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"needs the 'pandas' package.*pip install 'xlaprof\[pandas\]'"):
        result.gaps.to_pandas()
    assert len(result.gaps) == result.gap_count  # the rows themselves need no pandas


def test_a_result_shows_a_short_html_summary(session_dir):
    result = xlaprof.analyze(session_dir)
    html = result._repr_html_()
    top = result.findings[0]
    assert html.startswith("<div>") and result.session.path in html and top.kind.value in html
    assert "to_pandas()" in html and "<script" not in html and len(html) < 5000


REPR_BYTES = 2048  # a result's repr in a notebook: a few lines
RESULT_PACKAGES = ("xlaprof.analysis", "xlaprof.session")


def reprs(name: str, obj, depth: int):
    """(name, repr) of ``obj`` if it is an analysis or session result, and of the values of its
    fields ``depth`` levels down (a list's first items one by one: a list's own repr is Python's)."""
    if type(obj).__module__.startswith(RESULT_PACKAGES):
        yield name, repr(obj)
    if depth and is_dataclass(obj):
        for f in fields(obj):
            value = getattr(obj, f.name)
            listed = isinstance(value, list) and not isinstance(value, Table)
            for i, item in enumerate(value[:3] if listed else [value]):
                yield from reprs(f"{name}.{f.name}" + (f"[{i}]" if listed else ""), item, depth - 1)


def test_every_result_has_a_repr_of_a_few_lines(session_dir, tmp_path):
    result = xlaprof.analyze(session_dir)
    other = xlaprof.analyze(write_session(str(tmp_path), "other", {"localhost_9012": training_capture(
        steps=12, devices=2, read_every=2, sampled=True)}))
    found = [*reprs("result", result, 2), *reprs("worker", result.workers[0], 2),
             *reprs("diff", diff_sessions(result, other), 2),
             *((f"result.{t}", repr(getattr(result, t))) for t in TABLES)]
    big = {name: len(text) for name, text in found if len(text.encode()) > REPR_BYTES}
    assert not big, big
    assert repr(result).count("\n") < 25 and repr(result.gaps).startswith(f"<Table of {result.gap_count:,} rows (")
    assert "findings=<Table of " in repr(result) and repr(result.session).startswith("<Session ")
