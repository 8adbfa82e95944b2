"""Speed of xlaprof's read + full analysis against xprof's trace-viewer conversion of the same file.

Run on demand (not a test):  .venv/bin/python bench/bench_analysis.py [--events 250000,500000,1000000]

For each size it builds a TPU-shaped training capture (``xlaprof.synthetic.training_capture``:
4 chips, 50 ops per step, a read every step, a recompile every 100 steps), then times, each in a
fresh subprocess so that its peak RSS is its own:
  xlaprof: Session.load + analyze + the JSON report, written as the CLI writes it
  xprof:   xspace_to_tool_data([path], "trace_viewer", {})
Wall time is the work alone (imports excluded); peak RSS is the whole child process's.
Then, as a person runs it, the command end to end (a fresh ``python -m xlaprof analyze PATH --json``
with its output to a file: start-up, imports, read, analysis, writing the JSON) against the same
xprof conversion: the ``cli ratio`` column (target, issue 20: at most 0.05 at 1M events).
Target (issue 3): at 1M events, xlaprof at most a tenth of xprof's time, with lower peak memory.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)



def _child(tool: str, path: str) -> dict:
    if tool == "xlaprof":
        from xlaprof.analysis import analyze
        from xlaprof.report.json_report import write_analysis_json
        from xlaprof.session import Session

        start = time.perf_counter()
        session = Session.load(path)
        pieces: list[bytes] = []
        write_analysis_json(analyze(session), pieces.append)
        out = b"".join(pieces)
        events = session.event_count
    else:
        from xprof.convert import raw_to_tool_data

        start = time.perf_counter()
        out, _ = raw_to_tool_data.xspace_to_tool_data([path], "trace_viewer", {})
        events = 0
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "output_bytes": len(out), "events": events}


def _measure(tool: str, path: str) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", tool, path],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure_cli(path: str) -> float:
    """Seconds of ``xlaprof analyze PATH --json`` in a fresh process, as a person runs it (byte code
    cached, as after an install: one untimed run first writes it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "xlaprof", "analyze", path, "--json"]
    times = []
    for _ in range(2):
        with open(os.devnull, "wb") as sink:
            start = time.perf_counter()
            subprocess.run(command, stdout=sink, stderr=subprocess.DEVNULL, check=True, cwd=REPO, env=env)
            times.append(time.perf_counter() - start)
    return times[-1]


def _capture(directory: str, target_events: int) -> tuple[str, int]:
    from tests.support.synthetic import bench_capture

    data, events = bench_capture(target_events)
    path = os.path.join(directory, f"bench_{target_events}.xplane.pb")
    with open(path, "wb") as handle:
        handle.write(data)
    return path, events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", default="250000,500000,1000000", help="capture sizes, comma-separated")
    parser.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0
    header = (f"{'events':>9} | {'xlaprof s':>9} {'xprof s':>8} {'ratio':>6} | {'xlaprof us/ev':>13} "
              f"{'xprof us/ev':>11} | {'xlaprof MB':>10} {'xprof MB':>9} | {'file MB':>7} | "
              f"{'cli s':>6} {'cli ratio':>9}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="xlaprof-bench-") as directory:
        for target in (int(n) for n in args.events.split(",")):
            path, events = _capture(directory, target)
            ours, theirs, cli = _measure("xlaprof", path), _measure("xprof", path), _measure_cli(path)
            assert ours["events"] == events, (ours["events"], events)
            print(f"{events:>9} | {ours['seconds']:>9.2f} {theirs['seconds']:>8.2f} "
                  f"{ours['seconds'] / theirs['seconds']:>6.3f} | {ours['seconds'] / events * 1e6:>13.2f} "
                  f"{theirs['seconds'] / events * 1e6:>11.2f} | {ours['peak_rss_mb']:>10.0f} "
                  f"{theirs['peak_rss_mb']:>9.0f} | {os.path.getsize(path) / 2**20:>7.1f} | "
                  f"{cli:>6.2f} {cli / theirs['seconds']:>9.3f}", flush=True)
            os.remove(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
