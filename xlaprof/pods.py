"""Where the per-worker part of an analysis runs: in this process, or as tasks on a Dask cluster.

Contract: ``analysis_tasks(workers, scheduler=..., jobs=...)`` is a context manager giving the
``run_tasks`` that ``analysis.analyze`` takes, or ``None`` to analyse in this process:
- ``scheduler`` (``tcp://HOST:8786``; default ``$XLAPROF_DASK_SCHEDULER``): an existing cluster;
  each task reads its worker's capture itself from the session's path (a local path the cluster
  shares, or an fsspec URL), so captures never travel through this process;
- else ``jobs == 1``, a session of one worker, or (without ``jobs``) captures adding up to less
  than ``LOCAL_CLUSTER_MIN_BYTES`` (analysed here in less time than a cluster takes to start):
  ``None``, no Dask start-up cost;
- else an embedded local cluster of ``jobs`` processes (default: one per core, at most one per
  worker), one thread each, started here and closed on exit.
``cluster_tasks(address, processes)`` is that ``run_tasks`` on a given cluster, always.
``run_tasks(fn, tasks)`` submits one task per item, shows one progress bar over them on a
terminal, and returns the results in order, each kept as it arrives (a task's exception is
raised here, as the task raised it). Needs ``dask.distributed``.
"""
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator

from xlaprof.progress import progress_bar

SCHEDULER_ENV = "XLAPROF_DASK_SCHEDULER"
LOCAL_CLUSTER_MIN_BYTES = 256 << 20  # smaller sessions are analysed in this process unless --jobs says

RunTasks = Callable[[Callable, list], list]


def scheduler_address(given: str | None) -> str | None:
    """The scheduler to use: the one given, else ``$XLAPROF_DASK_SCHEDULER``, else None."""
    return given or os.environ.get(SCHEDULER_ENV) or None


def local_processes(workers: int, jobs: int | None) -> int:
    """Processes of an embedded cluster: ``jobs``, else one per core, at most one per worker."""
    return jobs if jobs else max(1, min(os.cpu_count() or 1, workers))


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

    logging.getLogger("distributed").setLevel(logging.ERROR)  # its start and stop are no news to a user
    with contextlib.ExitStack() as stack:
        if address is None:
            # The nanny's default MALLOC_TRIM_THRESHOLD_ (64 KiB) returns every large numpy array's
            # memory to the OS: measured, a worker's task took 2x as long with it.
            stack.enter_context(dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}))
            cluster = stack.enter_context(LocalCluster(
                n_workers=processes, threads_per_worker=1, processes=True,
                scheduler_kwargs={"dashboard": False}, silence_logs=logging.ERROR))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(address, timeout="20s"))
        yield lambda fn, tasks: _run(client, fn, tasks)


def _run(client, fn: Callable, tasks: list) -> list:
    from distributed import as_completed

    futures = client.map(fn, tasks, pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    results: list = [None] * len(tasks)
    with progress_bar(desc="analysing workers", total=len(tasks), unit="worker") as bar:
        for future in as_completed(futures):
            results[index[future.key]] = future.result()
            future.release()
            bar.update(1)
    return results
