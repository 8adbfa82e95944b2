"""Captures started from the dashboard: the same capture as ``xlaprof capture``, run by the server.

Contract (no Dash):
- ``capture_request(hosts, port, duration, name, allow_remote)`` checks a capture form's fields
  and returns a ``CaptureRequest``, else raises ``XlaprofError`` with one line saying what is wrong.
  Hosts are ``host`` or ``host:port`` separated by commas or spaces (at most ``MAX_HOSTS``; a
  host is a name or an IP address, nothing else); ``port`` is the default for hosts without one;
  ``duration`` seconds in (0, ``MAX_DURATION_S``]; ``name`` empty (a timestamp) or a run name of
  letters, digits, ``.``, ``_`` and ``-``. The address rule: a dashboard captures only this
  machine's workers (``localhost``, ``127.0.0.0/8``, ``::1``) unless its server was started with
  ``--allow-remote-capture`` (``allow_remote``), since anyone who can open the dashboard could
  otherwise make it connect to any address.
- ``CaptureJobs(logdir)`` runs one capture at a time: ``start(request)`` launches ``python -m
  xlaprof capture --logdir LOGDIR ...`` (the CLI itself: the same code, the same one-line errors,
  nothing kept of a capture that got nothing) and returns the job id, or raises ``XlaprofError``
  while another capture runs; ``status(job)`` says how far it is (``CaptureStatus``: running with
  the seconds elapsed of the duration, done with the run name, or failed with the CLI's one
  line), ``None`` for a job id it does not know.
"""
from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from xlaprof.errors import XlaprofError

MAX_DURATION_S = 300.0
MAX_HOSTS = 64
_HOST = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9][A-Za-z0-9.-]{0,252}))(?::(?P<port>\d{1,5}))?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
LOCAL_NAMES = ("localhost",)


@dataclass(frozen=True)
class CaptureRequest:
    hosts: str  # "host:port,host:port": every host with its port
    duration_s: float
    name: str | None


@dataclass(frozen=True)
class CaptureStatus:
    state: str  # "running", "done" or "failed"
    elapsed_s: float
    duration_s: float
    run: str | None = None  # done: the session's run name
    error: str | None = None  # failed: the CLI's one line


def capture_request(hosts: object, port: object, duration: object, name: object, allow_remote: bool) -> CaptureRequest:
    default_port = _port(port)
    try:
        duration_s = float(duration)
    except (TypeError, ValueError):
        raise XlaprofError(f"the duration must be a number of seconds, not {duration!r}") from None
    if not 0 < duration_s <= MAX_DURATION_S:
        raise XlaprofError(f"the duration must be more than 0 and at most {MAX_DURATION_S:g} seconds, not {duration_s:g}")
    name = (name or "").strip() if isinstance(name, (str, type(None))) else None
    if name is None or (name and not _NAME.match(name)):
        raise XlaprofError("a run name is letters, digits, '.', '_' and '-' (or empty: a timestamp)")
    items = [h for h in re.split(r"[,\s]+", hosts.strip()) if h] if isinstance(hosts, str) else []
    if not items:
        raise XlaprofError("name at least one host: localhost, or host:port")
    if len(items) > MAX_HOSTS:
        raise XlaprofError(f"at most {MAX_HOSTS} hosts can be captured from the dashboard")
    addresses = [_address(item, default_port, allow_remote) for item in items]
    return CaptureRequest(",".join(addresses), duration_s, name or None)


def _port(value: object) -> int:
    try:
        port = int(str(value))
    except ValueError:
        raise XlaprofError(f"the port must be a number from 1 to 65535, not {value!r}") from None
    if not 1 <= port <= 65535:
        raise XlaprofError(f"the port must be a number from 1 to 65535, not {port}")
    return port


def _address(item: str, default_port: int, allow_remote: bool) -> str:
    found = _HOST.match(item)
    if found is None:
        raise XlaprofError(f"not a host or host:port: {item[:80]!r}")
    host = found["v6"] or found["name"]
    port = _port(found["port"]) if found["port"] else default_port
    if not allow_remote and not is_local(host):
        raise XlaprofError(f"this dashboard captures only workers on this machine (localhost), not {host}: start it "
                           f"with 'xlaprof dashboard --allow-remote-capture' to capture other hosts")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_local(host: str) -> bool:
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # another name: it may resolve anywhere
        return False


class CaptureJobs:
    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}

    def start(self, request: CaptureRequest) -> str:
        with self._lock:
            if any(job.status().state == "running" for job in self._jobs.values()):
                raise XlaprofError("a capture started from this dashboard is still running: wait for it to finish")
            job_id = str(len(self._jobs) + 1)
            self._jobs[job_id] = _Job(self.logdir, request)
            return job_id

    def status(self, job_id: object) -> CaptureStatus | None:
        job = self._jobs.get(job_id) if isinstance(job_id, str) else None
        return job.status() if job is not None else None


class _Job:
    """One ``xlaprof capture`` process and a thread that waits for it."""

    def __init__(self, logdir: str, request: CaptureRequest) -> None:
        self.request = request
        self.started = time.monotonic()
        self.result: CaptureStatus | None = None
        command = [sys.executable, "-m", "xlaprof", "capture", "--logdir", logdir, "--hosts", request.hosts,
                   "--duration", f"{request.duration_s:g}"] + (["--name", request.name] if request.name else [])
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        threading.Thread(target=self._wait, name="xlaprof-dashboard-capture", daemon=True).start()

    def _wait(self) -> None:
        out, err = self.process.communicate()
        elapsed = time.monotonic() - self.started
        path = out.strip().splitlines()[-1] if out.strip() else ""
        if self.process.returncode in (0, 3) and path:  # 3: some workers answered (the CLI's partial capture)
            self.result = CaptureStatus("done", elapsed, self.request.duration_s, run=os.path.basename(path))
        else:
            self.result = CaptureStatus("failed", elapsed, self.request.duration_s, error=_one_line(err))

    def status(self) -> CaptureStatus:
        return self.result or CaptureStatus("running", time.monotonic() - self.started, self.request.duration_s)


def _one_line(stderr: str) -> str:
    """The CLI's error line ("xlaprof: error: ..."), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("xlaprof: error:")]
    line = (errors or lines or ["the capture stopped without saying why"])[-1]
    return line.removeprefix("xlaprof: error: ")
