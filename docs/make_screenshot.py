"""The README's picture of the dashboard, made from a real capture: ``docs/img/dashboard.png``.

Run on demand (needs the test extras: selenium, and Debian's chromium and chromium-driver):

    .venv/bin/python docs/make_screenshot.py                  # capture the demo workload, then shoot
    .venv/bin/python docs/make_screenshot.py --logdir LOGDIR  # shoot LOGDIR's newest session

Contract: without ``--logdir`` it captures the demo workload as ``xlaprof demo`` does (a real
torch_xla worker on the CPU device, ``--duration`` seconds) into a fresh temporary logdir and says
where on stderr. It then serves the logdir with the real dashboard (``python -m xlaprof dashboard``),
opens the newest session's page in headless Chromium at 1280x800, waits until the findings and the
timeline's bars are drawn, and writes the first screen as a PNG to ``--output``. It exits 0 when
the picture is written, else 2 with one line (no session, nothing drawn in time).
``tests/browser/test_screenshot_browser.py`` runs it on the suite's real capture.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.dashboard_harness import DashboardServer, chromium, wait_for  # noqa: E402
from xlaprof.errors import XlaprofError  # noqa: E402
from xlaprof.session import list_sessions  # noqa: E402

WIDTH, HEIGHT = 1280, 800
DRAWN = "document.querySelector('#findings .finding') && document.querySelector('#timeline .js-plotly-plot .bars')"
DRAW_TIMEOUT_S = 180  # the server analyses the session on the first visit


def newest_run(logdir: str) -> str:
    runs = [s for s in list_sessions(logdir) if not s.error]
    if not runs:
        raise XlaprofError(f"{logdir}: no readable session to show")
    return runs[0].run


def shoot(logdir: str, output: Path) -> Path:
    """Serve ``logdir``, open its newest session's page at WIDTH x HEIGHT, write its first screen."""
    run = newest_run(logdir)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="xlaprof-shot-") as scratch, DashboardServer(logdir, scratch) as server:
        driver = chromium(Path(scratch) / "profile")
        try:
            driver.set_window_size(WIDTH, HEIGHT)
            # The window's size holds the viewport in headless Chromium; make the page's own size exact.
            inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
            driver.set_window_size(2 * WIDTH - inner[0], 2 * HEIGHT - inner[1])
            driver.get(f"{server.url}/session/{run}")
            try:
                wait_for(driver, DRAWN, timeout=DRAW_TIMEOUT_S)
            except Exception as exc:  # selenium's TimeoutException
                raise XlaprofError(f"{server.url}/session/{run}: the findings and timeline were not drawn "
                                   f"within {DRAW_TIMEOUT_S} s") from exc
            driver.save_screenshot(str(output))
        finally:
            driver.quit()
    return output


def capture_demo_logdir(duration_s: float) -> str:
    from collectors.demo import capture_demo

    logdir = tempfile.mkdtemp(prefix="xlaprof-demo-shot-")
    session = capture_demo(logdir=logdir, duration_s=duration_s)
    print(f"captured the demo: {session}", file=sys.stderr)
    return logdir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", help="shoot this logdir's newest session (default: capture the demo first)")
    parser.add_argument("--duration", type=float, default=4.0, help="seconds of the demo's capture (default: 4)")
    parser.add_argument("-o", "--output", type=Path, default=REPO / "docs" / "img" / "dashboard.png",
                        help="the PNG to write (default: docs/img/dashboard.png)")
    args = parser.parse_args(argv)
    try:
        logdir = args.logdir or capture_demo_logdir(args.duration)
        print(shoot(logdir, args.output))
    except XlaprofError as exc:
        print(f"make_screenshot: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    sys.exit(main())
