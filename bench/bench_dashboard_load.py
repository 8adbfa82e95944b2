"""Load: 20 concurrent clients browsing a ~1,000,000-event session on the real dashboard.

Run: ``.venv/bin/python bench/bench_dashboard_load.py [--events 1000000] [--clients 20] [--rounds 3]``. Starts the
dashboard in a subprocess on loopback, warms the analysis cache with one visit, then has every
client browse the session ``--rounds`` times at once (sessions page, session page, a zoom, a page
of gaps: six requests, ``tests.support.dash_requests.browse``). Prints requests, errors, throughput,
latency percentiles and how many times the server read the session from disk.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.harness import bench_parser, temporary_bench_session  # noqa: E402
from tests.support.dash_requests import browse, live_callbacks  # noqa: E402
from tests.support.dashboard_harness import DashboardServer  # noqa: E402


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with temporary_bench_session(args.events) as bench:
        print(f"session: {bench.events:,} events")
        with DashboardServer(bench.logdir, bench.tmp, verbose=True) as server:
            callbacks = live_callbacks(server.url)
            started = time.perf_counter()
            browse(server.url, "big", callbacks, (1.0, 20.0))
            print(f"first visit (reads and analyses the session): {time.perf_counter() - started:.2f} s")

            def client(i: int):
                return [r for _ in range(args.rounds) for r in browse(server.url, "big", callbacks, (i, i + 20.0))]

            started = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                results = [r for rs in pool.map(client, range(args.clients)) for r in rs]
            wall = time.perf_counter() - started
            reads = server.output().count(f"reading session {bench.run_dir}")
    latencies = sorted(seconds for _, seconds in results)
    errors = sum(status != 200 for status, _ in results)
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    print(f"{args.clients} clients x {args.rounds} rounds: {len(results)} requests in {wall:.1f} s "
          f"({len(results) / wall:.0f} req/s), {errors} errors")
    print(f"latency ms: median {statistics.median(latencies) * 1000:.0f}, p95 {pct(0.95):.0f}, "
          f"max {latencies[-1] * 1000:.0f}")
    print(f"session reads from disk during the whole run: {reads}")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
