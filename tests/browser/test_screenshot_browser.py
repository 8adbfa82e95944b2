"""The README's picture of the dashboard: ``docs/make_screenshot.py`` makes it from a real capture
(here the suite's real capture of the demo worker) at 1280x800, and the README shows the file it
writes."""
from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.workers import REPO

pytestmark = pytest.mark.torch_xla
IMAGE = "docs/img/dashboard.png"


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_the_script_shoots_a_real_session_at_1280x800(real_logdir, tmp_path):
    output = tmp_path / "shot.png"
    result = subprocess.run([sys.executable, "docs/make_screenshot.py", "--logdir", real_logdir, "-o", str(output)],
                            cwd=REPO, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(output)
    assert png_size(output) == (1280, 800)
    assert output.stat().st_size > 30_000  # a drawn page, not a blank one (a blank 1280x800 PNG is ~5 kB)


def test_a_logdir_without_a_session_is_one_line_and_exit_2(tmp_path):
    result = subprocess.run([sys.executable, "docs/make_screenshot.py", "--logdir", str(tmp_path), "-o",
                             str(tmp_path / "shot.png")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "no readable session" in result.stderr and not (tmp_path / "shot.png").exists()


def test_the_readme_shows_the_picture_the_script_writes():
    readme = (Path(REPO) / "README.md").read_text()
    assert re.search(rf"!\[[^\]]+\]\({re.escape(IMAGE)}\)", readme)
    assert png_size(Path(REPO) / IMAGE) == (1280, 800)
