"""Where a session's workers are analysed (``xlaprof.dask_tasks.analysis_tasks``): in this process for
one worker, ``--jobs 1`` or captures under ``LOCAL_CLUSTER_MIN_BYTES`` (a local cluster costs more
than it saves there, measured by bench/bench_dask_tasks.py), else on a cluster (started in
tests/cli/test_dask_tasks_json.py, which checks that path)."""
from __future__ import annotations

import os

from xlaprof.dask_tasks import LOCAL_CLUSTER_MIN_BYTES, analysis_tasks, local_processes


def _in_process(**options) -> bool:
    with analysis_tasks(**options) as run_tasks:
        return run_tasks is None


def test_small_sessions_one_worker_and_jobs_1_stay_in_this_process():
    assert _in_process(workers=64, capture_bytes=LOCAL_CLUSTER_MIN_BYTES - 1)
    assert _in_process(workers=1, capture_bytes=10 * LOCAL_CLUSTER_MIN_BYTES)
    assert _in_process(workers=64, jobs=1, capture_bytes=10 * LOCAL_CLUSTER_MIN_BYTES)


def test_a_local_cluster_has_a_process_per_core_at_most_one_per_worker(caplog):
    cores = os.cpu_count() or 1
    assert local_processes(workers=3, jobs=None) == min(cores, 3)
    assert local_processes(workers=64, jobs=1) == 1 and not caplog.records
    # More jobs than cores or workers only wait, and cost their memory: capped, with a note.
    assert local_processes(workers=64, jobs=cores + 3) == min(cores, 64)
    assert local_processes(workers=2, jobs=1000) == min(cores, 2)
    assert [r.getMessage() for r in caplog.records] == [
        f"note: --jobs {cores + 3} capped at {cores} processes ({cores} cores, 64 workers to analyse)",
        f"note: --jobs 1000 capped at {min(cores, 2)} processes ({cores} cores, 2 workers to analyse)"]
