"""``xlaprof export -o`` never destroys an input: through the real command, an output that is a
capture of the session, the input file itself, the manifest, anything inside a session or a
logdir's plugins/profile, a hard link or a symlink to a capture, a FIFO, a device (as root too), a
directory or an empty name is one line and exit 2, with every file as it was and no temporary file
left; ``-`` writes the trace to stdout; a write that fails (the file size limit standing in for a
full disk) names the output, keeps the file it would have replaced and leaves nothing behind."""
from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys

import pytest

from tests.support.synthetic import training_capture, write_session
from tests.support.workers import REPO, run_cli


@pytest.fixture
def logdir(tmp_path):
    """A logdir with one run (its capture and manifest), and a copy of the run outside any logdir."""
    run = write_session(str(tmp_path / "logs"), "run", {"localhost_1": training_capture(steps=5)},
                        {"created_unix": 1000.0})
    copy = tmp_path / "session"
    copy.mkdir()
    for name in os.listdir(run):
        (copy / name).write_bytes(open(os.path.join(run, name), "rb").read())
    return tmp_path


def _snapshot(root) -> dict:
    """Every path below ``root``: its kind and, for a regular file, its bytes."""
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            st = os.lstat(path)
            found[path] = (stat.S_IFMT(st.st_mode), open(path, "rb").read() if stat.S_ISREG(st.st_mode) else None)
    return found


def _refused(args: list[str], expected: str, root) -> None:
    before = _snapshot(root)
    result = run_cli("export", *args, timeout=120)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in result.stderr, lines
    assert ".partial" not in lines[0] and "tmp" not in lines[0].replace(str(root), "")  # no temporary name
    assert _snapshot(root) == before  # nothing replaced, nothing left behind


CASES = {
    # name: (input, output, the words of the line), paths relative to the fixture's directory
    "capture_in_session": ("session", "session/localhost_1.xplane.pb", "inside the input session"),
    "manifest_in_session": ("session", "session/xlaprof.json", "inside the input session"),
    "new_file_in_session": ("session", "session/trace.json", "inside the input session"),
    "input_file_itself": ("session/localhost_1.xplane.pb", "session/localhost_1.xplane.pb",
                          "the same file as the input"),
    "manifest_of_logdir_run": ("logs", "logs/plugins/profile/run/xlaprof.json", "inside a logdir's plugins/profile"),
    "new_run_in_logdir": ("logs", "logs/plugins/profile/trace.json", "inside a logdir's plugins/profile"),
    "another_logdirs_capture": ("session", "logs/plugins/profile/run/localhost_1.xplane.pb",
                                "inside a logdir's plugins/profile"),
    "a_directory": ("session", "logs", "is a directory"),
    "no_directory": ("session", "missing/trace.json", "its directory does not exist"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("fmt", ["perfetto", "chrome"])
def test_an_output_that_could_destroy_an_input_is_refused(logdir, case, fmt):
    source, output, expected = CASES[case]
    _refused([str(logdir / source), "--format", fmt, "-o", str(logdir / output)], expected, logdir)


def test_links_to_a_capture_are_refused(logdir):
    capture = logdir / "session" / "localhost_1.xplane.pb"
    os.link(capture, logdir / "hard.pb")
    os.symlink(capture, logdir / "soft.pb")
    _refused([str(logdir / "session"), "-o", str(logdir / "hard.pb")], "the same file as the input", logdir)
    _refused([str(logdir / "session"), "-o", str(logdir / "soft.pb")], "inside the input session", logdir)


def test_a_fifo_a_device_and_an_empty_name_are_refused(logdir):
    fifo = logdir / "fifo"
    os.mkfifo(fifo)
    _refused([str(logdir / "session"), "-o", str(fifo)], "a FIFO (named pipe), not a regular file", logdir)
    _refused([str(logdir / "session"), "-o", ""], "an empty output path", logdir)
    for device in ("/dev/full", "/dev/null"):  # as root, a rename would replace the device node
        before = os.stat(device)
        _refused([str(logdir / "session"), "-o", device], "a character device, not a regular file", logdir)
        after = os.stat(device)
        assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_dash_writes_the_trace_to_stdout(logdir):
    result = subprocess.run([sys.executable, "-m", "xlaprof", "export", str(logdir / "session"), "--format",
                             "chrome", "-o", "-"], capture_output=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    trace = json.loads(result.stdout)
    assert len(trace["traceEvents"]) > 100
    assert b"-: " in result.stderr and b"slices" in result.stderr  # the summary goes to stderr
    assert sorted(os.listdir(logdir)) == ["logs", "session"]


def test_a_failed_write_names_the_output_keeps_the_old_file_and_leaves_nothing(logdir):
    """RLIMIT_FSIZE makes the write fail past 4 KiB (EFBIG), as a full disk fails it (ENOSPC)."""
    out = logdir / "trace.json"
    out.write_text("the previous export")

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    result = subprocess.run([sys.executable, "-m", "xlaprof", "export", str(logdir / "session"), "--format", "chrome",
                             "-o", str(out)], capture_output=True, text=True, cwd=REPO, timeout=120,
                            preexec_fn=small_files)
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"xlaprof: error: {out}: File too large (nothing written)\n"
    assert out.read_text() == "the previous export" and sorted(os.listdir(logdir)) == ["logs", "session", "trace.json"]
