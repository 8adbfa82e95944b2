"""Where a session's workers are analysed (``xlaprof.pods.analysis_tasks``): in this process for
one worker, ``--jobs 1`` or captures under ``LOCAL_CLUSTER_MIN_BYTES`` (a local cluster costs more
than it saves there, measured by bench/bench_pods.py), else on a cluster (started in
tests/cli/test_pods_dask.py, which checks that path)."""
from __future__ import annotations

from xlaprof.pods import LOCAL_CLUSTER_MIN_BYTES, analysis_tasks, local_processes


def _in_process(**options) -> bool:
    with analysis_tasks(**options) as run_tasks:
        return run_tasks is None


def test_small_sessions_one_worker_and_jobs_1_stay_in_this_process():
    assert _in_process(workers=64, capture_bytes=LOCAL_CLUSTER_MIN_BYTES - 1)
    assert _in_process(workers=1, capture_bytes=10 * LOCAL_CLUSTER_MIN_BYTES)
    assert _in_process(workers=64, jobs=1, capture_bytes=10 * LOCAL_CLUSTER_MIN_BYTES)


def test_a_local_cluster_has_a_process_per_core_at_most_one_per_worker():
    assert local_processes(workers=3, jobs=None) <= 3
    assert local_processes(workers=64, jobs=5) == 5
