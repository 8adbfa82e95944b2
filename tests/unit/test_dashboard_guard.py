"""logdir_guard.resolve_run: a session id from a URL reaches a listed run directory or nothing."""
from __future__ import annotations

import os

import pytest

from dashboard.data.logdir_guard import (
    is_plausible_run_name,
    listed_sessions,
    resolve_run,
)
from tests.support.synthetic import training_capture, write_session
from xlaprof.errors import RunNotFoundError

SECRET = "TOP-SECRET-4f1c9a"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("guard")
    logdir = root / "logdir"
    capture = training_capture(steps=3, devices=1)
    write_session(str(logdir), "good", {"localhost_9012": capture})
    # Outside the logdir: a directory that looks like a session, and a secret file.
    outside = root / "outside"
    write_session(str(outside), "elsewhere", {"localhost_9012": capture})
    (root / "secret.txt").write_text(SECRET)
    profile = logdir / "plugins" / "profile"
    os.symlink(outside / "plugins" / "profile" / "elsewhere", profile / "linked_out")
    leaky = profile / "leaky"
    leaky.mkdir()
    os.symlink(root / "secret.txt", leaky / "localhost_9012.xplane.pb")
    (profile / ".staged").mkdir()
    (profile / ".staged" / "localhost_9012.xplane.pb").write_bytes(capture)
    return str(logdir)


def test_a_listed_run_resolves_to_its_directory(logdir):
    assert resolve_run(logdir, "good") == os.path.join(logdir, "plugins", "profile", "good")


@pytest.mark.parametrize("run", [
    "..", "../..", "../../secret.txt", "%2e%2e", "%2E%2E%2F%2e%2e", "%252e%252e", "..%2fsecret.txt",
    "good/../good", "good%2f..%2fgood", "/etc/passwd", "/", "", ".", ".staged", "good\x00", "good/",
    "nosuchrun", "linked_out", "leaky", "C:\\Windows", "g" * 500,
])
def test_hostile_and_unknown_ids_are_rejected_without_leaking(logdir, run):
    with pytest.raises(RunNotFoundError) as err:
        resolve_run(logdir, run)
    assert SECRET not in str(err.value)
    assert "no session named" in str(err.value)


def test_the_absolute_path_of_a_real_run_is_not_a_session_id(logdir):
    with pytest.raises(RunNotFoundError):
        resolve_run(logdir, os.path.join(logdir, "plugins", "profile", "good"))


@pytest.mark.parametrize("value", [None, 5, ["good"], {"run": "good"}, b"good"])
def test_non_strings_are_rejected(logdir, value):
    assert not is_plausible_run_name(value)
    with pytest.raises(RunNotFoundError):
        resolve_run(logdir, value)


def test_plausible_names_are_any_one_directory_name():
    for name in ("2024_01_02_03_04_05", "demo-2.v1", "demo run", "a%20b", "ünï", "semi;colon", "50%"):
        assert is_plausible_run_name(name), name
    for name in ("", ".", "..", ".staged", "a/b", "a%2fb", "%2e%2e", "a\x00", "x" * 2000):
        assert not is_plausible_run_name(name), name


def test_runs_leading_out_of_the_logdir_are_not_listed(logdir):
    assert [s.run for s in listed_sessions(logdir)] == ["good"]
