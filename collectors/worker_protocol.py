"""How a workload process talks to whoever started it (``collectors.demo.start_worker``, the tests).

Contract: ``worker_parser(description)`` is an ``ArgumentParser`` with the two options every
workload takes: ``--port`` (the profiler port to serve) and ``--watch-stdin`` (exit as soon as
stdin closes, so a starter that dies takes its worker with it); ``watch_stdin(args)`` arms the
latter; ``announce_ready(port)`` prints the ``ready <port>`` line the starter waits for, once the
workload is warm (compiled, training).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading


def worker_parser(description: str, default_port: int | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=default_port, required=default_port is None,
                        help="the profiler server's port")
    parser.add_argument("--watch-stdin", action="store_true", help="exit when stdin closes")
    return parser


def watch_stdin(args: argparse.Namespace) -> None:
    if args.watch_stdin:
        threading.Thread(target=_exit_when_stdin_closes, daemon=True).start()


def announce_ready(port: int) -> None:
    print(f"ready {port}", flush=True)


def _exit_when_stdin_closes() -> None:
    sys.stdin.read()
    os._exit(0)
