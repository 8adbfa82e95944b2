"""``run.sh``, the set-up of a fresh machine: ``demo`` installs what the demo needs
(``xlaprof[demo]``), ``test`` every extra (``xlaprof[all]``), and a ``.venv`` already right for
either is reused. The real script runs in a copy of the repository's set-up files whose ``.venv``
holds a stand-in Python that records what it was asked to run (installing torch for real takes GBs
and minutes: the real install is what ``./run.sh setup`` does on every fresh machine)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.workers import REPO as REPO_DIR

REPO = Path(REPO_DIR)

# Answers the set-up's checks (Python 3.11, the C parts import; torch and torch_xla at their pins where
# $STAND_IN_HAS_TORCH is set, else not installed) and logs every other call; a call holding
# $STAND_IN_FAIL exits 3.
STAND_IN = """#!/bin/sh
case "$*" in
  *"import sys; sys.exit"*|*"import collectors._stack_watch"*|*"import xlaprof.xspace._wire"*) exit 0 ;;
  *"importlib.metadata"*) [ -n "$STAND_IN_HAS_TORCH" ]; exit $? ;;
esac
echo "$(basename "$0") $*" >> "$(dirname "$0")/../calls.log"
case "$*" in *"pip install"*) echo "$TMPDIR" >> "$(dirname "$0")/../pip_tmpdirs.log" ;; esac
case "$*" in *"${STAND_IN_FAIL:-no call has this}"*) exit 3 ;; esac
"""


# `python3.11 -m venv DIR` makes DIR a .venv of stand-ins.
STAND_IN_PYTHON = """#!/bin/sh
[ "$1 $2" = "-m venv" ] || exit 9
mkdir -p "$3/bin" && cp "$STAND_IN_BIN"/python "$STAND_IN_BIN"/xlaprof "$3/bin/"
"""

# `df -Pk PATH`: folder $STAND_IN_ROOMY is a filesystem of its own with $STAND_IN_ROOMY_KB free; every
# other folder is on one with $STAND_IN_DISK_KB.
STAND_IN_DF = """#!/bin/sh
path=$(cd "$2" 2>/dev/null && pwd -P)
case "$path" in
  "$STAND_IN_ROOMY"/*|"$STAND_IN_ROOMY") kb=$STAND_IN_ROOMY_KB mount=/roomy ;;
  *) kb=$STAND_IN_DISK_KB mount=/ ;;
esac
echo "Filesystem 1024-blocks Used Available Capacity Mounted on"
echo "stand-in $kb 0 $kb 0% $mount"
"""


@pytest.fixture
def sandbox(tmp_path) -> Path:
    for name in ("run.sh", "pyproject.toml", "setup.py"):
        shutil.copy2(REPO / name, tmp_path / name)
    for pattern, where in (("*.c", "collectors"), ("*.c", "xlaprof/xspace")):
        (tmp_path / where).mkdir(parents=True)
        for source in (REPO / where).glob(pattern):
            shutil.copy2(source, tmp_path / where / source.name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "xlaprof"):
        write_script(bin_dir / tool, STAND_IN)
    return tmp_path


def write_script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def run_sh(sandbox: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run the sandbox's run.sh; its result and the calls it made (then forgotten). The stand-in
    installs nothing, so the script's free-space check asks for none unless ``env`` says otherwise:
    how full this machine's disk is must not decide these tests."""
    env = {**os.environ, "XLAPROF_SETUP_VENV_GB": "0", "XLAPROF_SETUP_DOWNLOADS_GB": "0", **(env or {})}
    result = subprocess.run(["bash", str(sandbox / "run.sh"), *args], capture_output=True, text=True,
                            timeout=60, env=env)
    log = sandbox / ".venv" / "calls.log"
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return result, calls


def installs(calls: list[str]) -> list[str]:
    return [c.split()[-1] for c in calls if c.startswith("python -m pip install") and "-e" in c.split()]


@pytest.mark.skipif(not (shutil.which("cc") and Path("/usr/bin/chromium").exists()),
                    reason="needs cc and chromium, else run.sh installs them with apt")
def test_demo_installs_the_demo_extras_and_test_all_of_them_each_once(sandbox):
    result, calls = run_sh(sandbox, "demo", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    assert installs(calls) == [".[demo]"] and calls[-1] == "xlaprof demo --no-dashboard"

    result, calls = run_sh(sandbox, "demo")
    assert installs(calls) == [] and "up to date" in result.stderr  # reused

    result, calls = run_sh(sandbox, "test", "-x")
    assert result.returncode == 0, result.stderr
    assert installs(calls) == [".[all]"] and calls[-1] == "python -m pytest -x"

    for command in ("test", "demo", "setup"):  # a .venv set up for the tests serves everything
        result, calls = run_sh(sandbox, command)
        assert installs(calls) == [] and "up to date" in result.stderr, command

    (sandbox / "setup.py").write_text((sandbox / "setup.py").read_text() + "\n# changed\n")
    result, calls = run_sh(sandbox, "demo")
    assert installs(calls) == [".[demo]"]  # a changed set-up file installs again


@pytest.mark.skipif(not (shutil.which("cc") and Path("/usr/bin/chromium").exists()),
                    reason="needs cc and chromium, else run.sh installs them with apt")
def test_the_whole_suite_runs_the_shared_phase_then_the_exclusive_one_and_either_failing_fails_it(sandbox):
    run_sh(sandbox, "setup")
    shared, alone = "python -m pytest -n 2 --dist loadfile -m not exclusive", "python -m pytest -m exclusive"
    result, calls = run_sh(sandbox, "test")
    assert result.returncode == 0, result.stderr
    assert calls == [shared, alone]
    result, calls = run_sh(sandbox, "test", env={"STAND_IN_FAIL": "not exclusive"})
    assert result.returncode == 3 and calls == [shared, alone]  # the exclusive phase runs all the same
    result, calls = run_sh(sandbox, "test", env={"STAND_IN_FAIL": "-m exclusive"})
    assert result.returncode == 3 and calls == [shared, alone]
    result, calls = run_sh(sandbox, "test", env={"XLAPROF_TEST_WORKERS": "4"})
    assert calls[0] == shared.replace("-n 2", "-n 4")


@pytest.mark.skipif(not shutil.which("cc"), reason="needs cc, else run.sh installs it with apt")
def test_a_disk_too_full_for_the_install_is_one_line_before_pip_runs(sandbox):
    need_gb = shutil.disk_usage(sandbox).free // 2**30 + 1000
    result, calls = run_sh(sandbox, "setup", env={"XLAPROF_SETUP_VENV_GB": str(need_gb)})
    assert result.returncode == 2 and installs(calls) == [] and not any("pip" in c for c in calls)
    [line] = result.stderr.strip().splitlines()
    assert re.fullmatch(rf"\[run\.sh\] the install needs about {need_gb} GB free for the venv and 0 for pip's downloads; "
                        rf"{re.escape(str(sandbox))} \d+ GB, .* \d+ GB, .* \d+ GB: free some space and run again", line), line
    assert (sandbox / ".venv" / "bin" / "python").exists()  # left as it was


@pytest.fixture
def small_disk(sandbox, tmp_path_factory) -> dict:
    """The environment of a machine whose disk has 6 GB free: a stand-in ``df`` says so of every folder
    but ``STAND_IN_ROOMY``'s; the memory's folder and the temporary one are folders of the test's own."""
    tools = tmp_path_factory.mktemp("tools")
    write_script(tools / "python3.11", STAND_IN_PYTHON)
    write_script(tools / "df", STAND_IN_DF)
    shutil.copytree(sandbox / ".venv/bin", tools / "stand-in-bin")
    return {"PATH": f"{tools}:{os.environ['PATH']}", "PYTHON": "python3.11", "STAND_IN_BIN": str(tools / "stand-in-bin"),
            "XLAPROF_SETUP_SHM": str(tmp_path_factory.mktemp("shm")), "TMPDIR": str(tmp_path_factory.mktemp("tmp")),
            "STAND_IN_DISK_KB": str(6 * 2**20), "STAND_IN_ROOMY_KB": str(24 * 2**20),
            "XLAPROF_SETUP_VENV_GB": "9", "XLAPROF_SETUP_DOWNLOADS_GB": "5"}


@pytest.mark.skipif(not shutil.which("cc"), reason="needs cc, else run.sh installs it with apt")
@pytest.mark.parametrize("roomy, disk_gb, downloads", [
    ("TMPDIR", 6, "TMPDIR"),  # the temporary folder is on another disk, with room for both
    ("XLAPROF_SETUP_SHM", 6, "TMPDIR"),  # the venv in memory, pip's downloads on the disk
    ("XLAPROF_SETUP_SHM", 4, "venv"),  # both in memory
])
def test_a_disk_too_full_for_the_install_puts_the_venv_where_there_is_room_and_again_once_cleared(
        sandbox, small_disk, roomy, disk_gb, downloads):
    env = {**small_disk, "STAND_IN_ROOMY": small_disk[roomy], "STAND_IN_DISK_KB": str(disk_gb * 2**20)}
    place = Path(env[roomy])
    result, calls = run_sh(sandbox, "setup", env=env)
    assert result.returncode == 0, result.stderr
    venv = sandbox / ".venv"
    [home] = [path for path in place.iterdir() if path.name.startswith("xlaprof-venv-")]
    assert venv.is_symlink() and venv.resolve() == home.resolve() and installs(calls) == [".[all]"]
    assert f"creating .venv as a link to {home.resolve()} ({sandbox} has too little room;" in result.stderr
    tmpdirs = set((home / "pip_tmpdirs.log").read_text().split())
    assert tmpdirs == ({str(Path(env["TMPDIR"]).resolve())} if downloads == "TMPDIR" else {str(home.resolve() / ".pip-tmp")})
    assert not (home / ".pip-tmp").exists()  # gone after

    result, calls = run_sh(sandbox, "setup", env=env)
    assert installs(calls) == [] and "up to date" in result.stderr  # reused where it is

    shutil.rmtree(home)  # cleared, as memory is at a reboot
    result, calls = run_sh(sandbox, "setup", env=env)
    assert result.returncode == 0, result.stderr
    assert venv.is_symlink() and venv.resolve().is_relative_to(place.resolve()) and installs(calls) == [".[all]"]

    # No room anywhere: one line, and nothing removed. 12 GB on the temporary folder's disk hold the venv or
    # the downloads, not both; in memory, beside a disk with room for the downloads, 8 GB hold neither.
    too_small_gb = 12 if roomy == "TMPDIR" else 8
    env["STAND_IN_ROOMY_KB"] = str(too_small_gb * 2**20)
    (venv / "bin" / "python").rename(venv / "python-aside")
    result, calls = run_sh(sandbox, "setup", env=env)
    assert result.returncode == 2 and calls == []
    [line] = result.stderr.strip().splitlines()
    rooms = {name: too_small_gb if name == roomy else disk_gb for name in ("TMPDIR", "XLAPROF_SETUP_SHM")}
    assert line == ("[run.sh] the install needs about 9 GB free for the venv and 5 for pip's downloads; "
                    f"{sandbox} {disk_gb} GB, {env['TMPDIR']} {rooms['TMPDIR']} GB, "
                    f"{env['XLAPROF_SETUP_SHM']} {rooms['XLAPROF_SETUP_SHM']} GB: free some space and run again")
    assert (venv / "python-aside").exists()


@pytest.mark.skipif(not (shutil.which("cc") and os.path.isdir("/dev/shm")), reason="needs cc and /dev/shm")
def test_memory_is_offered_only_what_it_can_spare_for_the_work(sandbox, small_disk):
    if subprocess.run(["stat", "-f", "-c", "%T", "/dev/shm"], capture_output=True, text=True).stdout.strip() != "tmpfs":
        pytest.skip("/dev/shm is not in memory here")
    env = {**small_disk, "XLAPROF_SETUP_SHM": "/dev/shm", "STAND_IN_ROOMY": "/dev/shm",
           "XLAPROF_SETUP_MEMORY_LEFT_GB": "100000"}  # more than any machine has: memory can spare none
    result, calls = run_sh(sandbox, "setup", env=env)
    assert result.returncode == 2 and calls == [], result.stderr
    assert result.stderr.strip().endswith(", /dev/shm 0 GB: free some space and run again"), result.stderr


@pytest.mark.skipif(not shutil.which("cc"), reason="needs cc, else run.sh installs it with apt")
def test_with_torch_and_torch_xla_at_their_pins_an_install_needs_no_room_for_them(sandbox):
    need_gb = str(shutil.disk_usage(sandbox).free // 2**30 + 1000)  # more than this disk has
    result, calls = run_sh(sandbox, "setup", env={"XLAPROF_SETUP_VENV_GB": need_gb, "STAND_IN_HAS_TORCH": "1"})
    assert result.returncode == 0, result.stderr  # an update of xlaprof itself: a few MB
    assert installs(calls) == [".[all]"]
