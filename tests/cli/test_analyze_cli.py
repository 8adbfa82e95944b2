"""``xlaprof analyze`` in a subprocess: the options that join more than the capture."""
from __future__ import annotations

import json

from tests.support.debug_samples import READ, TEXT
from tests.support.synthetic import training_capture, write_session
from tests.support.workers import run_cli


def test_analyze_debug_file_flag_joins_a_file_kept_elsewhere(tmp_path):
    run = write_session(str(tmp_path / "logs"), "run", {"localhost_9012": training_capture(steps=10, devices=1),
                                                          "localhost_9013": training_capture(steps=10, devices=1)})
    debug = tmp_path / "elsewhere.txt"
    debug.write_text(TEXT)
    result = run_cli("analyze", run, "--json", "--debug-file", str(debug))
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["execution_causes"]
    # the one file is joined to every worker of the session
    assert {(r["worker"], r["frame"], r["count"]) for r in rows if r["cause"] == READ} == {
        ("localhost:9012", "/work/train.py:6", 2), ("localhost:9013", "/work/train.py:6", 2)}
