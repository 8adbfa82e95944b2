"""One rule for a logdir's bad runs: a run that fails to read (a truncated capture, an empty one,
a manifest without a capture, a FIFO) is skipped for the newest readable run, with one warning
line naming it and why, by ``analyze LOGDIR``, ``diff``, ``export``, the API and the dashboard
alike; with no readable run, one line and exit 2."""
from __future__ import annotations

import json
import logging
import os

import pytest

import xlaprof
from dashboard.app import create_app
from tests.support.synthetic import training_capture, write_session
from tests.support.workers import run_cli
from tests.unit.test_dashboard_app import route
from xlaprof.errors import BadProfileError
from xlaprof.session import Session, profile_root

CAPTURE = training_capture(steps=12, devices=1)
# name -> (how to make the bad run in its directory, what its warning says)
BAD_RUNS = {
    "truncated": (lambda d: (d / "w_1.xplane.pb").write_bytes(CAPTURE[: len(CAPTURE) * 2 // 3]), "truncated"),
    "empty": (lambda d: (d / "w_1.xplane.pb").write_bytes(b""), "the file is empty"),
    "manifest_only": (lambda d: (d / "xlaprof.json").write_text('{"format": 1, "workers": []}'),
                      "a manifest (xlaprof.json) but no .xplane.pb capture"),
    "fifo": (lambda d: os.mkfifo(d / "w_1.xplane.pb"), "a FIFO"),
}


def _bad_logdir(root, *, good: bool):
    logdir = root / "logs"
    if good:
        write_session(str(logdir), "good", {"w_1": CAPTURE}, {"created_unix": 1000.0})
    for age, (run, (make, _)) in enumerate(BAD_RUNS.items()):
        run_dir = logdir / "plugins" / "profile" / run
        run_dir.mkdir(parents=True)
        make(run_dir)
        for path in [run_dir, *run_dir.iterdir()]:  # all newer than good
            os.utime(path, (2000.0 + age, 2000.0 + age), follow_symlinks=False)
    return logdir


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return _bad_logdir(tmp_path_factory.mktemp("bad-runs"), good=True)


def _warned(stderr: str, times: int = 1) -> list[str]:
    lines = stderr.strip().splitlines()
    assert all(line.startswith("xlaprof: skipping session ") for line in lines) and "Traceback" not in stderr, stderr
    for run, (_, why) in BAD_RUNS.items():
        assert sum(f"session {run}, which cannot be read: " in line and why in line for line in lines) == times, (run, lines)
    return lines


def test_analyze_diff_and_export_skip_each_bad_run_with_one_line(logdir, tmp_path):
    result = run_cli("analyze", str(logdir), "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session"].endswith(os.path.join("profile", "good"))
    assert len(_warned(result.stderr)) == len(BAD_RUNS)
    result = run_cli("diff", str(logdir), str(logdir), "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["after"]["session"].endswith("good")
    assert len(_warned(result.stderr, times=2)) == 2 * len(BAD_RUNS)  # once per side
    out = tmp_path / "trace.json"
    result = run_cli("export", str(logdir), "--format", "chrome", "-o", str(out), timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["traceEvents"]
    assert len(_warned("\n".join(line for line in result.stderr.splitlines() if "skipping" in line))) == len(BAD_RUNS)


def test_the_api_skips_them_too(logdir, caplog):
    with caplog.at_level(logging.WARNING, logger="xlaprof"):
        assert os.path.basename(xlaprof.analyze(str(logdir)).session.path) == "good"
    _warned("\n".join("xlaprof: " + r.getMessage() for r in caplog.records))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="xlaprof"):
        assert Session.load(str(logdir)).run == "good"  # a read that fails counts as much as a listing
    _warned("\n".join("xlaprof: " + r.getMessage() for r in caplog.records))


def test_the_dashboard_lists_them_with_their_error_and_compares_readable_runs_only(logdir):
    write_session(str(logdir), "good2", {"w_1": training_capture(steps=8, devices=1)}, {"created_unix": 1500.0})
    try:
        client = create_app(str(logdir)).server.test_client()
        status, text = route(client, "/")
        assert status == 200 and text.count("row-error") >= len(BAD_RUNS)
        assert "a manifest (xlaprof.json) but no .xplane.pb capture" in text
        status, text = route(client, "/compare")  # the two newest readable runs, not the newest two
        assert status == 200 and "compare-verdict" in text and "could not be compared" not in text
    finally:
        for name in os.listdir(os.path.join(profile_root(str(logdir)), "good2")):
            os.remove(os.path.join(profile_root(str(logdir)), "good2", name))
        os.rmdir(os.path.join(profile_root(str(logdir)), "good2"))


def test_with_no_readable_run_it_is_one_line_and_exit_2(tmp_path):
    logdir = _bad_logdir(tmp_path, good=False)
    for args in (("analyze", str(logdir)), ("diff", str(logdir), str(logdir)),
                 ("export", str(logdir), "-o", str(tmp_path / "t.pftrace"))):
        result = run_cli(*args, timeout=120)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and result.stdout == "", (args, result.stderr)
        assert lines[0].startswith(f"xlaprof: error: {logdir}: no readable session here; the newest, "), lines
    assert not (tmp_path / "t.pftrace").exists()
    with pytest.raises(BadProfileError, match="no readable session here"):
        xlaprof.analyze(str(logdir))
