"""``xlaprof.start_server``: the torch_xla profiler server in this process, checked and idempotent.

Contract: ``start_server(port=9012)`` starts the profiler server that ``xlaprof capture``
(or TensorBoard) pulls profiles from, plus the metrics and stack samplers (``stack_hz``: Python
stack samples per second while a capture records, 0 = off), and returns the port it serves.
- Idempotent: a second call returns the running server's port; asking for a different port
  while one runs raises ``XlaprofError``.
- ``port=0`` picks a free port. A port already in use raises ``XlaprofError`` naming it
  (torch_xla's own server only logs that and serves nothing).
- Several processes per machine (``torch_xla.launch``, ``xmp.spawn``): with
  ``per_process=True`` (the default when the launcher says there are several local processes)
  each serves ``port + local ordinal``; the chosen port is logged so it can be captured.
"""
from __future__ import annotations

import os
import socket
import sys
import threading

from collectors import metrics_sampler, read_calls, stack_sampler, torch_xla_import
from xlaprof.errors import XlaprofError

_lock = threading.Lock()
_server = None
_port: int | None = None

# Environment variables by which launchers tell a process its local rank and the local count.
_LOCAL_RANK_VARS = ("PJRT_LOCAL_PROCESS_RANK", "LOCAL_RANK")
_LOCAL_COUNT_VARS = ("PJRT_LOCAL_PROCESS_COUNT", "LOCAL_WORLD_SIZE")


def _env_int(names: tuple[str, ...]) -> int | None:
    for name in names:
        value = os.environ.get(name)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    return None


def local_ordinal() -> int | None:
    """This process's local rank under a multi-process launcher, else None."""
    count = _env_int(_LOCAL_COUNT_VARS)
    rank = _env_int(_LOCAL_RANK_VARS)
    return rank if rank is not None and (count is None or count > 1) else None


def _port_is_free(port: int) -> bool:
    # The profiler server binds every interface ([::]), so check the wildcard address.
    for family, address in ((socket.AF_INET6, ("::", port)), (socket.AF_INET, ("0.0.0.0", port))):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind(address)
                return True
        except OSError as exc:
            if family == socket.AF_INET6 and exc.errno in (97, 99):  # no IPv6 on this machine
                continue
            return False
    return False


def free_port(consecutive: int = 1) -> int:
    """A TCP port that is free on this machine right now, with the ``consecutive - 1`` ports
    after it free too (a base port for several local processes serving base + rank)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + consecutive <= 65536 and all(_port_is_free(base + k) for k in range(1, consecutive)):
            return base


def start_server(port: int = 9012, *, per_process: bool | None = None,
                 stack_hz: float = stack_sampler.DEFAULT_RATE_HZ) -> int:
    """Start torch_xla's profiler server in this process, for ``xlaprof capture --port PORT``.

    Args:
        port: the TCP port to serve (default 9012); 0 picks a free one.
        per_process: serve ``port + local rank`` (for several processes per host under
            ``torch_xla.launch``/``xmp.spawn``/torchrun). Default: on when the launcher's
            environment says there are several local processes.
        stack_hz: Python stack samples per second and thread while a capture records
            (default 1000, i.e. one per millisecond; 0 turns stack sampling off; at most 10000).
            Above 0 the reading ops are marked at their calls too (``read_calls``), which costs a
            read some microseconds even while nothing records; 0 leaves them unmarked.
    Returns the port served, also printed on stderr. Idempotent: a second call returns the
    running server's port (and sets ``stack_hz``). Also starts the metrics sampler, which
    records torch_xla counters into captures, and the stack sampler, which records the Python
    stack of every thread as a line of the capture; neither runs while no capture records.
    Raises ``XlaprofError`` for an invalid port or ``stack_hz``, a port in use, or a different
    port while a server already runs; ``MissingExtraError`` when torch_xla is not installed.
    """
    global _server, _port
    stack_hz = stack_sampler.check_rate(stack_hz)
    ordinal = local_ordinal()
    if per_process is None:
        per_process = ordinal is not None
    wanted = port + (ordinal or 0) if per_process and port else port
    with _lock:
        if _server is not None:
            if wanted in (0, _port):
                stack_sampler.set_rate(stack_hz)
                read_calls.install_for(stack_hz)
                return _port
            raise XlaprofError(f"the profiler server already runs on port {_port} in this process; "
                               f"cannot start another on {wanted}")
        if port < 0 or port > 65535:
            raise XlaprofError(f"port {port} is not a valid TCP port")
        chosen = wanted or free_port()
        if not _port_is_free(chosen):
            raise XlaprofError(f"port {chosen} is already in use: pick another, e.g. "
                               f"xlaprof.start_server({chosen + 1})")
        _server = torch_xla_import.profiler().start_server(chosen)
        _port = chosen
    metrics_sampler.ensure_sampler(ordinal)
    stack_sampler.set_rate(stack_hz)
    stack_sampler.ensure_sampler()
    read_calls.install_for(stack_hz)
    # Printed, not logged: the person starting a worker needs the port whatever logging is set to.
    where = f" (local process {ordinal})" if ordinal is not None else ""
    print(f"xlaprof: profiler server listening on port {chosen}{where}; capture with: "
          f"xlaprof capture --port {chosen}", file=sys.stderr, flush=True)
    return chosen
