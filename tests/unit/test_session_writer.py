"""collectors.session_writer: a session is whole or absent, written only once there is something to keep."""
from __future__ import annotations

import os
import signal

import pytest

from collectors.session_writer import StagedSession
from tests.support.synthetic import training_capture
from tests.support.workers import run_python
from xlaprof.errors import BadProfileError, XlaprofError
from xlaprof.interrupts import Interrupted, Signals
from xlaprof.session import Session, list_sessions, storage


@pytest.fixture(scope="module")
def capture() -> bytes:
    return training_capture(steps=2, devices=1)


def test_nothing_is_created_before_the_first_write(tmp_path, capture):
    logdir = tmp_path / "logs"
    staged = StagedSession(str(logdir), "run")
    assert not logdir.exists()
    staged.discard()
    assert not logdir.exists()
    with pytest.raises(BadProfileError):
        staged.add_capture("localhost", 9012, b"not a profile")  # validated before anything is written
    assert not logdir.exists()
    staged.add_capture("localhost", 9012, capture)
    path = staged.commit({"kind": "test"})
    assert os.path.basename(path) == "run" and [s.run for s in list_sessions(str(logdir))] == ["run"]
    assert Session.load(path).workers[0].name == "localhost_9012"


def test_two_captures_of_one_name_started_together_keep_both(tmp_path, capture):
    first, second = StagedSession(str(tmp_path), "same"), StagedSession(str(tmp_path), "same")
    assert first.run == second.run == "same"  # neither had written when both began
    first.add_capture("a", 1, capture)
    second.add_capture("b", 2, capture)  # finds the name taken and moves on
    paths = [first.commit({"kind": "test"}), second.commit({"kind": "test"})]
    assert [os.path.basename(p) for p in paths] == ["same", "same-2"]
    assert [w.name for w in Session.load(paths[0]).workers] == ["a_1"]
    assert [w.name for w in Session.load(paths[1]).workers] == ["b_2"]


def test_a_name_finished_meanwhile_is_never_overwritten(tmp_path, capture):
    late = StagedSession(str(tmp_path), "taken")
    early = StagedSession(str(tmp_path), "taken")
    early.add_capture("a", 1, capture)
    early.commit({"kind": "test"})
    late.add_capture("b", 2, capture)
    assert os.path.basename(late.commit({"kind": "test"})) == "taken-2"
    assert [w.name for w in Session.load(os.path.join(tmp_path, "plugins", "profile", "taken")).workers] == ["a_1"]


def test_a_bad_run_name_is_refused_before_anything_happens(tmp_path):
    with pytest.raises(XlaprofError, match="run name"):
        StagedSession(str(tmp_path / "logs"), "../escape")
    assert not (tmp_path / "logs").exists()


def test_a_failed_write_names_the_run_and_leaves_a_new_logdir_absent(tmp_path):
    """A full disk, stood in for by RLIMIT_FSIZE (the capture's write fails with EFBIG as it would
    with ENOSPC): one line naming the run's path and the file, and not even plugins/profile is left."""
    logdir = tmp_path / "logs"
    code = f"""
import resource
from collectors.session_writer import StagedSession
from tests.support.synthetic import training_capture
from tests.support.workers import run_python
from xlaprof.errors import XlaprofError
data = training_capture(steps=20, devices=1)  # 30 KB, over the 4 KiB limit
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
staged = StagedSession({str(logdir)!r}, "run")
try:
    staged.add_capture("localhost", 9012, data)
except XlaprofError as exc:
    staged.discard()
    print(exc)
"""
    result = run_python(code, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"{logdir}/plugins/profile/run: cannot write localhost_9012.xplane.pb: File too large; "
                             f"nothing was kept\n")
    assert os.listdir(tmp_path) == []


def test_discard_keeps_directories_it_did_not_create(tmp_path, capture):
    (tmp_path / "plugins" / "profile" / "other").mkdir(parents=True)
    staged = StagedSession(str(tmp_path), "run")
    staged.add_capture("localhost", 9012, capture)
    staged.discard()
    assert os.listdir(tmp_path / "plugins" / "profile") == ["other"]


@pytest.fixture
def command_signals():
    """SIGINT and SIGTERM handled as the ``xlaprof`` command handles them; this process's handlers after."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signals = Signals()
    yield signals
    signals.disarm()
    for signum, handler in before.items():
        signal.signal(signum, handler)


def test_a_signal_as_the_staging_directory_is_made_leaves_nothing_behind(tmp_path, capture, monkeypatch,
                                                                         command_signals):
    """SIGTERM the moment the claim made its directory, before the claim was recorded: the capture's
    discard() still removes it (the claim holds the signal back until it is recorded)."""
    make_new_dir = storage.make_new_dir

    def made_then_signalled(path: str) -> bool:
        made = make_new_dir(path)
        os.kill(os.getpid(), signal.SIGTERM)  # handled at this function's next instruction
        return made

    monkeypatch.setattr(storage, "make_new_dir", made_then_signalled)
    logdir = tmp_path / "logs"
    staged = StagedSession(str(logdir), "run")
    with pytest.raises(Interrupted):
        try:
            staged.add_capture("localhost", 9012, capture)
        except BaseException:
            staged.discard()  # as capture_session does
            raise
    assert not logdir.exists()  # the staging directory and the directories above it that it made
