"""First render of a session page in headless Chromium, this checkout beside another (the baseline).

Run on demand (not a test), from the repo root:
  .venv/bin/python bench/bench_dashboard_first_render.py [--base DIR] [--logdir DEMO_LOGDIR]
      [--sizes 10000,1000000] [--runs 3]

Sessions: the synthetic TPU-shaped capture of ``tests/support/synthetic.py`` at each of ``--sizes``
events, and with ``--logdir`` the newest session of a real logdir (e.g. one ``xlaprof demo
--no-dashboard`` wrote). For each session and each checkout (``--base DIR``: a checkout of the
code to compare with, e.g. ``git worktree add /tmp/dash-base <commit>``; this checkout always),
it starts that checkout's real dashboard (``python -m xlaprof dashboard``) and times, in fresh
browser profiles, from the navigation to the session's URL (the browser already started, on
about:blank) until
- the first view (``FIRST_VIEW``): the top findings, the overview cards with the idle-by-cause donut
  drawn, and the timeline's bars drawn; the figure the targets are about;
- the whole page (``WHOLE_PAGE``, this bench's earlier definition): the findings, the timeline's
  bars, the first gaps-table row and the step chart all drawn;
both from the same render: the first render (the server has not analysed the session yet) and
``--runs`` first visits with the analysis cached. Both definitions are DOM checks that read the same
on the base and on this tree. Both checkouts run in the same process, one after the
other, on the same sessions, so their figures share the machine's load (printed with them).
The browser window is ``WINDOW`` (1024x768); once the page is drawn it also prints where the answer
(the verdict and the top findings, issue 30) ends against the viewport's height, and how many grid
cells cut their text.
Targets (issue 21): a 10k-event session under 1.5 s, a 1M-event one under 2.5 s.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.harness import REPO  # noqa: E402
from tests.support.dashboard_harness import DashboardServer, chromium  # noqa: E402
from tests.support.synthetic import write_bench_session  # noqa: E402
from xlaprof.session import list_sessions  # noqa: E402

# The top findings: the answer's compact rows (issue 30), or on an older tree its findings list.
FINDINGS, TIMELINE = "#top-findings .compact-finding, #findings .finding", "#timeline .js-plotly-plot .bars"
FIRST_VIEW = (FINDINGS, ".cards .card-idle .js-plotly-plot .trace", TIMELINE)  # the donut's slices
WHOLE_PAGE = (FINDINGS, TIMELINE, "#gaps-table .ag-row .ag-cell", "#steps-chart .trace")  # the steps' bars or areas
WINDOW = (1024, 768)  # the browser window: the smallest screen the page is made for
# Where the answer ends (the verdict and the top findings: bottom of the last, px) and the viewport's
# height, and how many grid cells cut their text, once the whole page is drawn.
FOLD = """const rows = [...document.querySelectorAll('#verdict, #top-findings .compact-finding')];
  const cut = [...document.querySelectorAll('.xgrid .ag-cell')].filter(c => [c, ...c.querySelectorAll('.ag-cell-value')]
    .some(e => e.scrollWidth > e.clientWidth + 1)).length;
  return [rows.length ? Math.max(...rows.map(e => e.getBoundingClientRect().bottom)) : null, innerHeight, cut];"""
TARGETS_S = ((50_000, 1.5), (float("inf"), 2.5))  # (events up to, seconds)


def _drawn(selectors: tuple[str, ...]) -> str:
    return " && ".join(f"!!document.querySelector({s!r})" for s in selectors)


def _render(url: str, profile: str) -> tuple[float, float, list]:
    """Seconds until the first view and until the whole page are drawn, in one fresh browser of
    ``WINDOW``'s size, and ``FOLD`` once it is."""
    driver = chromium(profile)
    try:
        driver.set_window_size(*WINDOW)
        driver.get("about:blank")
        start = time.perf_counter()
        driver.get(url)
        first = None
        while time.perf_counter() - start < 300:
            now = time.perf_counter() - start
            view, whole = driver.execute_script(f"return [{_drawn(FIRST_VIEW)}, {_drawn(WHOLE_PAGE)}]")
            first = first if first is not None or not view else now
            if first is not None and whole:
                return first, now, driver.execute_script(FOLD)
            time.sleep(0.02)
        raise RuntimeError(f"{url} was not drawn within 300 s")
    finally:
        driver.quit()


def _measure(repo: str, logdir: str, run: str, runs: int, tmp: str) -> tuple[tuple[float, float], list]:
    with DashboardServer(logdir, tmp, repo=repo) as server:
        url = f"{server.url}/session/{run}"
        cold = _render(url, tempfile.mkdtemp(dir=tmp))
        return cold, [_render(url, tempfile.mkdtemp(dir=tmp)) for _ in range(runs)]


def _times(label: str, cold: float, warm: list[float]) -> str:
    return (f"{label} first render {cold:5.2f} s; cached: " + ", ".join(f"{t:.2f}" for t in warm)
            + f" s (median {statistics.median(warm):.2f}, spread {max(warm) - min(warm):.2f})")


def _target(events: int) -> float:
    return next(seconds for limit, seconds in TARGETS_S if events <= limit)


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a checkout of the code to measure beside this one")
    parser.add_argument("--logdir", help="a real logdir: its newest session is measured too")
    parser.add_argument("--sizes", default="10000,1000000", help="synthetic sessions' events, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="cached first visits per session and checkout")
    args = parser.parse_args()
    trees = ([("base", os.path.abspath(args.base))] if args.base else []) + [("this", REPO)]
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as tmp:
        sessions = []  # (label, logdir, run, events)
        for size in (int(s) for s in args.sizes.split(",") if s):
            logdir = os.path.join(tmp, f"logdir-{size}")
            _, count, _ = write_bench_session(logdir, size)
            sessions.append((f"synthetic {count:,} events", logdir, "big", count))
        if args.logdir:
            newest = list_sessions(args.logdir)[0]
            from xlaprof.session import Session

            count = Session.load(newest.path).event_count
            sessions.append((f"{newest.run} (real) {count:,} events", args.logdir, newest.run, count))
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min; 2 cores)")
        for label, logdir, run, events in sessions:
            print(f"\n{label}  (target for the first view < {_target(events)} s)")
            for name, repo in trees:
                cold, warm = _measure(repo, logdir, run, args.runs, tmp)
                print(f"  {name:<5} " + _times("first view:", cold[0], [w[0] for w in warm])
                      + f"   load {os.getloadavg()[0]:.1f}")
                print(f"  {name:<5} " + _times("whole page:", cold[1], [w[1] for w in warm]))
                bottom, height, cut = cold[2]
                answer = f"ends at {bottom:.0f} px of a {height} px viewport" if bottom is not None else "none"
                print(f"  {name:<5} at {WINDOW[0]}x{WINDOW[1]}: the answer (verdict, top findings) {answer}; "
                      f"{cut} grid cell(s) cut")
    return 0


if __name__ == "__main__":
    sys.exit(main())
