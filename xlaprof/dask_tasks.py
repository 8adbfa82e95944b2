"""Where the per-worker part of an analysis runs: in this process, or as tasks on a Dask cluster.

Contract: ``analysis_tasks(workers, scheduler=..., jobs=...)`` is a context manager giving the
``run_tasks`` that ``analysis.analyze`` takes, or ``None`` to analyse in this process:
- ``scheduler`` (``tcp://HOST:8786``; default ``$XLAPROF_DASK_SCHEDULER``): an existing cluster;
  each task reads its worker's capture itself from the session's path (a local path the cluster
  shares, or an fsspec URL), so captures never travel through this process;
- else ``jobs == 1``, a session of one worker, or (without ``jobs``) captures adding up to less
  than ``LOCAL_CLUSTER_MIN_BYTES`` (analysed here in less time than a cluster takes to start):
  ``None``, no Dask start-up cost;
- else an embedded local cluster of ``local_processes(workers, jobs)`` processes, one thread
  each, started here and closed on exit.
``cluster_tasks(address, processes)`` is that ``run_tasks`` on a given cluster, always.
``run_tasks(fn, tasks)`` submits one task per item, shows one progress bar over them on a
terminal, and returns the results in order, each kept as it arrives (a task's exception is
raised here, as the task raised it). Needs ``dask.distributed``.

Failing cleanly, each an ``XlaprofError`` of one line (exit 2 from the CLI); a cluster that
cannot run the tasks raises ``ClusterError``, which caches never keep as the session's error:
- the scheduler's address is checked before any connection (``check_scheduler_address``:
  ``tcp://HOST:PORT``, ``tls://HOST:PORT`` or ``HOST:PORT``, the port 1-65535), and a scheduler that
  refuses or does not answer fails within the connect timeout (``connect_timeout_s``:
  ``$XLAPROF_DASK_TIMEOUT``, else ``DEFAULT_CONNECT_TIMEOUT_S``; ``--scheduler-timeout`` sets it);
- a task whose Dask worker dies is run again by the scheduler on another worker (once the work is
  whole, each worker that left is logged as one warning); it fails, naming the last worker, when the workers that took
  it all died (``KilledWorker``), or when the cluster has had no worker for ``NO_WORKER_GRACE_S``
  while tasks wait, naming the workers that left: never a wait without end;
- the local cluster has at most one process per core and per worker: more ``jobs`` are capped,
  with a note; it is closed (its processes ended) however the analysis ends, Ctrl-C and SIGTERM
  included, and the tasks an error leaves on an external cluster are cancelled.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

from xlaprof.errors import ClusterError, XlaprofError
from xlaprof.progress import progress_bar

SCHEDULER_ENV = "XLAPROF_DASK_SCHEDULER"
TIMEOUT_ENV = "XLAPROF_DASK_TIMEOUT"
LOCAL_CLUSTER_MIN_BYTES = 256 << 20  # smaller sessions are analysed in this process unless --jobs says
DEFAULT_CONNECT_TIMEOUT_S = 5.0  # a scheduler on the network answers in milliseconds
NO_WORKER_GRACE_S = 10.0  # how long tasks may wait on a cluster without a worker (a nanny restarts one in ~2 s)
POLL_S = 0.5  # how often the cluster's workers are looked at while tasks run
SCHEMES = ("tcp", "tls")

log = logging.getLogger("xlaprof")

RunTasks = Callable[[Callable, list], list]


def check_scheduler_address(text: str, source: str = "--scheduler") -> str:
    """``text`` as a scheduler address Dask connects to (``HOST:PORT`` means ``tcp://HOST:PORT``);
    ``XlaprofError`` naming ``source`` when it is none."""
    given = text.strip()
    url = given if "://" in given else f"tcp://{given}"
    problem = None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port out of 0-65535, a bracket left open
        parts, port = None, None
    if url.split("://", 1)[0] not in SCHEMES:
        problem = f"the scheme must be {' or '.join(s + '://' for s in SCHEMES)}"
    elif parts is None or port is None or not 1 <= port <= 65535:
        problem = "it needs a port from 1 to 65535"
    elif not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        problem = "it needs a host, and nothing after the port"
    if problem:
        raise XlaprofError(f"{source}: {given!r} is not a Dask scheduler address: expected tcp://HOST:PORT "
                           f"({problem})")
    return f"{parts.scheme}://{parts.netloc}"


def scheduler_address(given: str | None) -> str | None:
    """The scheduler to use, checked: the one given, else ``$XLAPROF_DASK_SCHEDULER``, else None."""
    if given:
        return check_scheduler_address(given)
    from_env = os.environ.get(SCHEDULER_ENV)
    return check_scheduler_address(from_env, SCHEDULER_ENV) if from_env else None


def connect_timeout_s() -> float:
    """Seconds to wait for a scheduler to accept the connection and answer: ``$XLAPROF_DASK_TIMEOUT``
    (set by ``--scheduler-timeout``), else ``DEFAULT_CONNECT_TIMEOUT_S``."""
    text = os.environ.get(TIMEOUT_ENV)
    if not text:
        return DEFAULT_CONNECT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise XlaprofError(f"{TIMEOUT_ENV} (--scheduler-timeout): {text!r} is not a finite number of seconds above 0")
    return value


def local_processes(workers: int, jobs: int | None) -> int:
    """Processes of an embedded cluster: ``jobs``, else one per core; never more than cores or
    workers (a process more only waits, and costs its memory: a note says so)."""
    cores = os.cpu_count() or 1
    most = max(1, min(cores, workers))
    if jobs and jobs > most:
        log.warning("note: --jobs %d capped at %d processes (%d cores, %d workers to analyse)", jobs, most, cores,
                    workers)
    return min(jobs, most) if jobs else most


@contextlib.contextmanager
def analysis_tasks(workers: int, *, scheduler: str | None = None, jobs: int | None = None,
                   capture_bytes: int | None = None) -> Iterator[RunTasks | None]:
    address = scheduler_address(scheduler)
    small = jobs is None and capture_bytes is not None and capture_bytes < LOCAL_CLUSTER_MIN_BYTES
    if address is None and (jobs == 1 or workers <= 1 or small):
        yield None
        return
    with cluster_tasks(address, local_processes(workers, jobs)) as run_tasks:
        yield run_tasks


@contextlib.contextmanager
def cluster_tasks(address: str | None, processes: int = 1) -> Iterator[RunTasks]:
    """``run_tasks`` on the scheduler at ``address``, or on a local cluster of ``processes``."""
    import dask
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.CRITICAL)  # its start, stop and retries are no news to a user
    with contextlib.ExitStack() as stack:
        if address is None:
            # The nanny's default MALLOC_TRIM_THRESHOLD_ (64 KiB) returns every large numpy array's
            # memory to the OS: measured, a worker's task took 2x as long with it.
            stack.enter_context(dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}))
            stack.enter_context(_ending_children())
            cluster = stack.enter_context(LocalCluster(
                n_workers=processes, threads_per_worker=1, processes=True,
                scheduler_kwargs={"dashboard": False}, silence_logs=logging.CRITICAL))
            client = stack.enter_context(Client(cluster))
            where = "the local Dask cluster"
        else:
            client = stack.enter_context(_connected(address, connect_timeout_s()))
            where = f"the Dask cluster at {address}"
        yield lambda fn, tasks: _run(client, fn, tasks, where)


@contextlib.contextmanager
def _connected(address: str, timeout_s: float):
    """A client of the scheduler at ``address``, or one line saying why not within ``timeout_s``."""
    from distributed import Client

    parts = urlsplit(address)
    try:  # a refused or silent port is known at once (Dask's own connect retries until its timeout)
        socket.create_connection((parts.hostname, parts.port), timeout=timeout_s).close()
    except OSError as exc:
        why = f"no answer within {timeout_s:g} s" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ClusterError(f"the Dask scheduler at {address} cannot be reached ({why}): is it running? "
                           f"(--scheduler, or {SCHEDULER_ENV})") from None
    # Dask bounds the connection but not the handshake after it (a port that accepts and never
    # answers waits for ever): the client is made on a thread this one waits for, within the timeout.
    made: list = []
    maker = threading.Thread(target=_make_client, args=(Client, address, timeout_s, made), daemon=True,
                             name="xlaprof-dask-connect")
    maker.start()
    maker.join(timeout_s + 1.0)
    if not made or isinstance(made[0], BaseException):
        why = type(made[0]).__name__ if made else "no handshake"
        raise ClusterError(f"the Dask scheduler at {address} did not answer as one within {timeout_s:g} s ({why}); "
                           f"raise the wait with --scheduler-timeout SECONDS (or {TIMEOUT_ENV})")
    with made[0] as client:
        yield client


def _make_client(client_class, address: str, timeout_s: float, made: list) -> None:
    try:
        made.append(client_class(address, timeout=f"{timeout_s}s"))
    except Exception as exc:  # reported by the waiting thread, in one line
        made.append(exc)


@contextlib.contextmanager
def _ending_children():
    """End the child processes started inside the block that are still alive when it is left: a
    local cluster interrupted while it starts has no handle to close, and its nannies and workers
    would outlive the command."""
    import psutil

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    try:
        yield
    finally:
        started = [p for p in me.children(recursive=True) if p.pid not in before]
        for process in started:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _, alive = psutil.wait_procs(started, timeout=3)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()


def _run(client, fn: Callable, tasks: list, where: str) -> list:
    from distributed import KilledWorker, wait

    futures = client.map(fn, tasks, pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    results: list = [None] * len(tasks)
    pending = set(futures)
    watch = _WorkerWatch(client, where)
    try:
        with progress_bar(desc="analysing workers", total=len(tasks), unit="worker") as bar:
            while pending:
                try:
                    done, pending = wait(list(pending), timeout=POLL_S, return_when="FIRST_COMPLETED")
                except TimeoutError:  # none finished within POLL_S: look at the workers
                    done = set()
                for future in done:
                    try:
                        results[index[future.key]] = future.result()
                    except KilledWorker as exc:
                        raise ClusterError(
                            f"{where}: the Dask worker {exc.last_worker.address} died while analysing worker "
                            f"{index[future.key] + 1} of {len(tasks)}, as did the {exc.allowed_failures} before "
                            f"it that took the task (out of memory? a capture too large for one worker)") from None
                    future.release()
                    bar.update(1)
                if pending:
                    watch.check()
    except BaseException:
        with contextlib.suppress(Exception):
            client.cancel(futures)  # an external cluster stops working for a command that has ended
        raise
    for address in watch.left:  # said once the work is whole: a failure says it in its own line
        log.warning("the Dask worker %s left %s while analysing; its tasks were run again on the others",
                    address, where)
    return results


class _WorkerWatch:
    """The cluster's workers while tasks run: one warning per worker that leaves, and an error once
    the cluster has been without any for ``NO_WORKER_GRACE_S``, naming the ones that left."""

    def __init__(self, client, where: str) -> None:
        self.client, self.where = client, where
        self.workers = set(client.nthreads())
        self.left: list[str] = []
        self.alone_since: float | None = None

    def check(self) -> None:
        try:
            now = set(self.client.nthreads())
        except (OSError, TimeoutError) as exc:  # the scheduler itself went away
            raise ClusterError(f"{self.where}: the scheduler stopped answering ({type(exc).__name__})") from None
        self.left += sorted(self.workers - now)
        self.workers = now
        if now:
            self.alone_since = None
        elif self.alone_since is None:
            self.alone_since = time.monotonic()
        elif time.monotonic() - self.alone_since > NO_WORKER_GRACE_S:
            gone = ", ".join(self.left) or "none seen"
            raise ClusterError(f"{self.where} has had no worker for {NO_WORKER_GRACE_S:g} s while tasks waited "
                               f"(left while analysing: {gone}): the workers died or were stopped; start "
                               f"workers and run it again")
