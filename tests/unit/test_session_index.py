"""The persisted session index: figures computed once and listed without analysis after a restart,
recomputed the moment a session's files change, and never an error of its own (corrupt, other
version, read-only logdir); local and fsspec logdirs."""
from __future__ import annotations

import json
import os

import fsspec
import pytest

from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.pipeline.summary import FIGURES_VERSION, logdir_figures, session_figures
from xlaprof.session import Session, profile_root, storage
from xlaprof.session.index import INDEX_NAME, MAX_INDEX_BYTES, SessionIndex


class Counting:
    """An ``analysis_of`` that counts the sessions it analyses."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def __call__(self, run_dir: str):
        self.runs.append(os.path.basename(run_dir))
        return analyze(Session.load(run_dir))


@pytest.fixture
def logdir(tmp_path) -> str:
    for n, reads in ((1, 1), (2, 2), (3, 0)):
        write_session(str(tmp_path), f"run{n}", {"localhost_9012": training_capture(steps=6, devices=1,
                                                                                    read_every=reads, seed=n)})
    return str(tmp_path)


def _index_path(logdir: str) -> str:
    return os.path.join(profile_root(logdir), INDEX_NAME)


def test_figures_are_computed_once_and_listed_from_the_index_after_a_restart(logdir):
    first = Counting()
    rows = logdir_figures(logdir, analysis_of=first)
    assert sorted(first.runs) == ["run1", "run2", "run3"] and os.path.exists(_index_path(logdir))
    assert [r.session.run for r in rows] == ["run3", "run2", "run1"]  # newest first
    again = Counting()
    assert logdir_figures(logdir, analysis_of=again) == rows and again.runs == []
    direct = session_figures(analyze(Session.load(rows[0].session.path)))
    assert rows[0].figures == direct and rows[0].figures.steps == 6 and rows[0].error is None


def test_a_changed_capture_is_analysed_again_and_only_it(logdir):
    logdir_figures(logdir)
    capture = os.path.join(profile_root(logdir), "run2", "localhost_9012.xplane.pb")
    with open(capture, "wb") as handle:
        handle.write(training_capture(steps=9, devices=1))
    counting = Counting()
    rows = {r.session.run: r for r in logdir_figures(logdir, analysis_of=counting)}
    assert counting.runs == ["run2"] and rows["run2"].figures.steps == 9
    # the same size, a new modification time: analysed again too
    os.utime(capture, ns=(1, 1))
    counting = Counting()
    logdir_figures(logdir, analysis_of=counting)
    assert counting.runs == ["run2"]


def test_the_stored_files_must_match_and_a_bad_index_is_ignored(logdir):
    logdir_figures(logdir)
    path = _index_path(logdir)
    data = json.loads(open(path).read())
    data["sessions"]["run1"]["files"][0][1] += 1  # the index remembers another size: not trusted
    data["sessions"]["run3"]["summary"].pop("steps")  # a summary this xlaprof cannot read: recomputed
    open(path, "w").write(json.dumps(data))
    counting = Counting()
    rows = {r.session.run: r for r in logdir_figures(logdir, analysis_of=counting)}
    assert sorted(counting.runs) == ["run1", "run3"] and rows["run3"].figures.steps == 6
    for content in ("{not json", json.dumps({"format": 1, "version": "other", "sessions": {}}), "[]"):
        open(path, "w").write(content)
        counting = Counting()
        assert len(logdir_figures(logdir, analysis_of=counting)) == 3 and len(counting.runs) == 3


def test_a_broken_session_keeps_its_error_until_its_files_change(logdir):
    broken = write_session(logdir, "broken", {"localhost_9012": b"\x00garbage" * 10})
    first = {r.session.run: r for r in logdir_figures(logdir)}
    assert first["broken"].figures is None and "broken" in first["broken"].error
    counting = Counting()
    assert {r.session.run: r.error for r in logdir_figures(logdir, analysis_of=counting)}["broken"] == \
        first["broken"].error
    assert counting.runs == []
    with open(os.path.join(broken, "localhost_9012.xplane.pb"), "wb") as handle:
        handle.write(training_capture(steps=3, devices=1))
    fixed = {r.session.run: r for r in logdir_figures(logdir)}
    assert fixed["broken"].error is None and fixed["broken"].figures.steps == 3


def test_removed_sessions_leave_the_index_and_concurrent_writers_merge(logdir):
    a, b = (SessionIndex.open(logdir, FIGURES_VERSION) for _ in range(2))
    logdir_figures(logdir, index=a)
    write_session(logdir, "run4", {"localhost_9012": training_capture(steps=2, devices=1)})
    logdir_figures(logdir, index=b)  # b read the file before a wrote it, and computes all four
    stored = json.loads(open(_index_path(logdir)).read())["sessions"]
    assert sorted(stored) == ["run1", "run2", "run3", "run4"]
    storage.remove_tree(os.path.join(profile_root(logdir), "run1"))
    logdir_figures(logdir, index=SessionIndex.open(logdir, FIGURES_VERSION))
    write_session(logdir, "run5", {"localhost_9012": training_capture(steps=2, devices=1)})
    logdir_figures(logdir)
    assert sorted(json.loads(open(_index_path(logdir)).read())["sessions"]) == ["run2", "run3", "run4", "run5"]


def test_a_logdir_that_cannot_be_written_still_lists(logdir, monkeypatch, caplog):
    def refuse(path, data):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(storage, "write_bytes_atomic", refuse)
    with caplog.at_level("INFO", logger="xlaprof"):
        rows = logdir_figures(logdir)
    assert [r.figures.steps for r in rows] == [6, 6, 6]
    assert "could not be written" in caplog.text and not os.path.exists(_index_path(logdir))


def test_an_fsspec_logdir_is_indexed_too():
    fs = fsspec.filesystem("memory")
    root = "memory://index-test/logs"
    for run in ("a", "b"):
        fs.pipe(f"{root}/plugins/profile/{run}/localhost_9012.xplane.pb", training_capture(steps=4, devices=1))
    counting = Counting()
    assert [r.figures.steps for r in logdir_figures(root, analysis_of=counting)] == [4, 4]
    assert len(counting.runs) == 2 and fs.exists(f"{root}/plugins/profile/{INDEX_NAME}")
    again = Counting()
    logdir_figures(root, analysis_of=again)
    assert again.runs == []
    fs.pipe(f"{root}/plugins/profile/a/localhost_9012.xplane.pb", training_capture(steps=5, devices=1))
    logdir_figures(root, analysis_of=again)
    assert again.runs == ["a"]
    fs.rm("memory://index-test", recursive=True)


@pytest.mark.parametrize("kind", ["deep JSON", "FIFO", "symlink to /dev/zero", "over the size limit"])
def test_an_unreadable_index_is_treated_as_absent_and_rebuilt(logdir, kind):
    path = _index_path(logdir)
    if kind == "deep JSON":
        open(path, "w").write("[" * 200_000)  # nests past the JSON parser's depth
    elif kind == "FIFO":
        os.mkfifo(path)  # opening it for reading would wait for a writer forever
    elif kind == "symlink to /dev/zero":
        os.symlink("/dev/zero", path)
    else:
        with open(path, "wb") as handle:
            handle.truncate(MAX_INDEX_BYTES + 1)
    counting = Counting()
    rows = logdir_figures(logdir, analysis_of=counting)
    assert [r.figures.steps for r in rows] == [6, 6, 6] and sorted(counting.runs) == ["run1", "run2", "run3"]
    assert os.path.isfile(path) and not os.path.islink(path)  # the entry itself replaced, /dev/zero untouched
    assert sorted(json.loads(open(path).read())["sessions"]) == ["run1", "run2", "run3"]
    again = Counting()
    logdir_figures(logdir, analysis_of=again)
    assert again.runs == []
