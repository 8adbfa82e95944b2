"""PT_XLA_DEBUG_FILE: compile causes joined to compiles by graph hash, and executions forced by a
value read named by their line. The sample is torch_xla 2.9's format (PT_XLA_DEBUG_LEVEL=2)."""
from __future__ import annotations

from tests.support.debug_samples import READ, TEXT
from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.host.debug_file import parse_debug_text
from xlaprof.report import analysis_json
from xlaprof.session import Session


def test_compiles_and_executions_are_read_with_the_users_line():
    info = parse_debug_text(TEXT)
    assert set(info.graphs) == {"aa11", "bb22"}
    assert info.graphs["aa11"].compile_cause == READ and info.graphs["aa11"].user_frame == "/work/train.py:6"
    # the innermost frame outside torch_xla is the user's
    assert info.graphs["bb22"].user_frame == "/work/train.py:7"
    assert info.executions == {(READ, "/work/train.py:6"): 2, ("user torch_xla.sync", "/work/train.py:7"): 1}


def test_text_outside_blocks_and_truncated_blocks_are_ignored():
    info = parse_debug_text("garbage\nExecution Analysis: Execution Cause\n" + TEXT[:200])
    assert info.graphs == {}
    assert parse_debug_text("").executions == {}


def test_an_analysis_reports_executions_forced_by_a_read_as_a_finding(tmp_path):
    run = write_session(str(tmp_path), "run", {"localhost_9012": training_capture(steps=10, devices=1)})
    (tmp_path / "plugins" / "profile" / "run" / "localhost_9012.pt_xla_debug.txt").write_text(TEXT)
    report = analysis_json(analyze(Session.load(run)))
    assert report["execution_causes"][0] == {"worker": "localhost:9012", "cause": READ,
                                             "frame": "/work/train.py:6", "count": 2}
    (forced,) = [f for f in report["findings"] if f["kind"] == "forced_execution"]
    assert forced["source"] == "/work/train.py:6" and forced["count"] == 2 and "add_step_closure" in forced["advice"]
