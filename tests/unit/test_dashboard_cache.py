"""AnalysisCache: one read per unchanged session, a re-read when its files change, bounded."""
from __future__ import annotations

import os
import threading

import pytest

from dashboard.data.analysis_cache import AnalysisCache
from tests.support.synthetic import training_capture, write_session
from xlaprof.errors import SessionLoadError
from xlaprof.session import storage


@pytest.fixture
def runs(tmp_path):
    capture = training_capture(steps=4, devices=2)
    return {name: write_session(str(tmp_path), name, {"localhost_9012": capture}) for name in ("a", "b")}


def test_an_unchanged_session_is_read_once(runs):
    cache = AnalysisCache()
    first = cache.get(runs["a"])
    assert cache.get(runs["a"]) is first
    assert cache.loads == 1
    assert first.analysis.workers[0].devices


def test_a_rewritten_capture_is_read_again(runs):
    cache = AnalysisCache()
    before = cache.get(runs["a"]).analysis
    path = os.path.join(runs["a"], "localhost_9012.xplane.pb")
    with open(path, "wb") as handle:
        handle.write(training_capture(steps=8, devices=2))
    after = cache.get(runs["a"]).analysis
    assert cache.loads == 2
    assert len(after.workers[0].steps) == 8 != len(before.workers[0].steps)


def test_a_new_worker_file_changes_the_identity(runs):
    before = storage.file_stats(runs["a"])
    write_session(os.path.dirname(os.path.dirname(os.path.dirname(runs["a"]))), "a",
                  {"other_9013": training_capture(steps=2, devices=1)})
    assert storage.file_stats(runs["a"]) != before
    cache = AnalysisCache()
    assert len(cache.get(runs["a"]).analysis.workers) == 2


def test_staged_dot_files_do_not_count(runs):
    before = storage.file_stats(runs["a"])
    with open(os.path.join(runs["a"], ".x.xplane.pb.partial"), "wb") as handle:
        handle.write(b"half")
    assert storage.file_stats(runs["a"]) == before


def test_a_broken_session_fails_once_with_one_line_and_recovers_when_fixed(tmp_path):
    run = write_session(str(tmp_path), "bad", {"localhost_9012": b"\x00garbage" * 10})
    cache = AnalysisCache()
    for _ in range(3):
        with pytest.raises(SessionLoadError) as err:
            cache.get(run)
        assert "\n" not in str(err.value) and "localhost_9012" in str(err.value)
    assert cache.loads == 1
    with open(os.path.join(run, "localhost_9012.xplane.pb"), "wb") as handle:
        handle.write(training_capture(steps=2, devices=1))
    assert cache.get(run).analysis is not None
    assert cache.loads == 2


def test_captures_over_the_size_limit_are_refused(runs):
    cache = AnalysisCache(max_session_bytes=100)
    with pytest.raises(SessionLoadError, match="limit"):
        cache.get(runs["a"])


def test_least_recently_used_is_evicted(runs):
    cache = AnalysisCache(max_sessions=1)
    cache.get(runs["a"])
    cache.get(runs["b"])
    cache.get(runs["a"])
    assert cache.loads == 3
    big = AnalysisCache(max_sessions=2)
    for run in ("a", "b", "a", "b"):
        big.get(runs[run])
    assert big.loads == 2


def test_concurrent_requests_read_a_session_once(runs):
    cache = AnalysisCache()
    barrier = threading.Barrier(8)
    got = []

    def ask():
        barrier.wait()
        got.append(cache.get(runs["a"]))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.loads == 1 and len({id(g) for g in got}) == 1


def test_derived_values_are_built_once_per_entry(runs):
    cache = AnalysisCache(max_sessions=1)
    calls = []
    entry = cache.get(runs["a"])
    for _ in range(3):
        entry.derived("n", lambda a: calls.append(1) or len(a.workers))
    assert calls == [1]


def test_a_cluster_that_cannot_analyse_is_not_the_sessions_error(runs, tmp_path):
    """A scheduler nobody listens on (a real closed port): the failure is shown, but neither the
    cache nor the persisted index keeps it as the session's error; the next request asks again."""
    from collectors.server import free_port
    from xlaprof.analysis.pipeline.summary import FIGURES_VERSION, logdir_figures
    from xlaprof.errors import ClusterError
    from xlaprof.session.index import SessionIndex

    cache = AnalysisCache(scheduler=f"tcp://127.0.0.1:{free_port()}")
    for attempt in (1, 2):
        with pytest.raises(ClusterError, match="cannot be reached"):
            cache.get(runs["a"])
        assert cache.loads == attempt  # asked again, not served from the cache
    index = SessionIndex.open(str(tmp_path), FIGURES_VERSION)
    rows = logdir_figures(str(tmp_path), index=index, analysis_of=lambda run_dir: cache.get(run_dir).analysis)
    assert [r.figures for r in rows] == [None, None] and all("cannot be reached" in r.error for r in rows)
    rows = logdir_figures(str(tmp_path), index=index)  # the cluster is gone: analysed here, nothing stale kept
    assert all(r.error is None and r.figures.steps == 4 for r in rows)
