"""``xlaprof analyze`` in a subprocess: the options that join more than the capture."""
from __future__ import annotations

import json

from tests.support.debug_samples import READ, TEXT
from tests.support.synthetic import training_capture, write_session
from tests.support.workers import REPO, run_cli


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


def test_compact_and_indented_json_hold_the_same_data_as_the_report(tmp_path):
    """``--json`` is compact (orjson), ``--indent 2`` indented: the same keys and values, which are
    those of the report built in-process and encoded by the standard library."""
    from xlaprof.analysis import analyze
    from xlaprof.report import analysis_json
    from xlaprof.session import Session

    path = tmp_path / "w_1.xplane.pb"
    path.write_bytes(training_capture(steps=30))
    compact, indented = (run_cli("analyze", str(path), "--json", *extra) for extra in ((), ("--indent", "2")))
    assert compact.returncode == 0 and indented.returncode == 0, compact.stderr + indented.stderr
    assert "\n  " not in compact.stdout.strip() and "\n  " in indented.stdout
    # The command states the directory it ran in (the repository: run_cli's cwd) as the paths' root.
    expected = json.loads(json.dumps(analysis_json(analyze(Session.load(str(path))), source_root=REPO)))
    assert json.loads(compact.stdout) == json.loads(indented.stdout) == expected
