"""Memory of reading and analysing one large capture: the reader decodes it from the file in pieces.

Run on demand (not a test):  .venv/bin/python bench/bench_big_capture.py [--mb 2048]

Writes a capture of about ``--mb`` MB (``tests/support/synthetic.py``'s ``write_wide_capture``: one
TPU op line, about 120 bytes an event in the file, of which the analysis keeps 24) to a temporary
directory, then, each in a fresh process, prints wall time and peak RSS of
  read      ``Session.load`` (the capture decoded into its columns)
  analyze   ``xlaprof analyze PATH --json`` end to end, as a person runs it
Target (issue 20): a 2 GB capture analyses within about 1 GB (before: the file was read whole,
2.1 GB peak for reading alone; then, read in pieces, analysed in 2,143 MB; now in about 530 MB:
docs/performance.md, "One large capture, bounded memory").
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

READ = "import sys; from xlaprof.session import Session; Session.load(sys.argv[1])"


def _run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``command`` in a fresh process (run alone: the largest child)."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(command, stdout=sink, check=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    return time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=2048, help="capture size in MB")
    args = parser.parse_args()
    from tests.support.synthetic import write_wide_capture

    with tempfile.TemporaryDirectory(prefix="xlaprof-big-") as tmp:
        path = os.path.join(tmp, "big_9012.xplane.pb")
        size = write_wide_capture(path, args.mb * 10**6 // 118)
        print(f"capture {size / 2**20:,.0f} MiB; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
              flush=True)
        # RUSAGE_CHILDREN keeps the largest child's peak: the smaller run first.
        for name, command in (("read", [sys.executable, "-c", READ, path]),
                              ("analyze", [sys.executable, "-m", "xlaprof", "analyze", path, "--json"])):
            seconds, peak = _run(command)
            print(f"{name:8s} {seconds:7.1f} s   peak RSS {peak:6.0f} MB  ({peak * 2**20 / size:.2f}x the file)",
                  flush=True)


if __name__ == "__main__":
    main()
