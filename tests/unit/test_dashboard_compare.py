"""The compare page's and the trend's view-models, without Dash: what they show agrees with the
diff and the sessions' figures, and URLs can only pick listed sessions."""
from __future__ import annotations

import numpy as np
import pytest

from dashboard.figures import step_distributions
from dashboard.views.compare import compare_view, default_pair, parse_pair, step_bins
from dashboard.views.trend import trend_series
from tests.support.synthetic import training_capture, write_before_after, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.compare.session_diff import diff_sessions
from xlaprof.analysis.pipeline.summary import logdir_figures
from xlaprof.report import diff_json
from xlaprof.session import Session
from xlaprof.units import format_duration_change


@pytest.fixture(scope="module")
def diff(tmp_path_factory):
    before, after = write_before_after(str(tmp_path_factory.mktemp("compare")))
    return diff_sessions(analyze(Session.load(before)), analyze(Session.load(after)))


def test_the_compare_view_agrees_with_the_diff(diff):
    view, data = compare_view(diff), diff_json(diff)
    assert view.verdict == data["verdict"] and (view.before, view.after) == (diff.before.session.path,
                                                                             diff.after.session.path)
    assert view.causes == ["busy", "unattributed", "host_blocked", "host_tracing", "transfer_to_device", "transfer_from_device",
                           "compile"]
    read, steps = view.causes.index("transfer_from_device"), diff.steps.before
    assert view.unit == "per step" and steps == 60
    assert view.before_ms[read] == pytest.approx(diff.idle_by_cause_us["transfer_from_device"].before / 1000 / steps)
    assert view.after_ms[read] == 0 and view.before_ms[0] == pytest.approx(diff.busy_us.before / 1000 / steps)
    assert view.rate_lines[0].startswith("steps: 60 in ") and view.rate_lines[1].startswith("device idle per step: ")
    np.testing.assert_allclose(view.step_before_ms, diff.step_time.before_us / 1000)
    # shared bins hold every step of both sessions
    for steps in (view.step_before_ms, view.step_after_ms):
        assert np.histogram(np.minimum(steps, view.bin_edges_ms[-1]), view.bin_edges_ms)[0].sum() == steps.size
    assert view.step_lines[0].startswith("median step ") and "95% CI " in view.step_lines[0]


def test_finding_rows_list_what_moved_first_with_their_times(diff):
    rows = compare_view(diff).finding_rows
    first = rows[0]
    assert (first["status"], first["kind"], first["span"], first["source"]) == (
        "resolved", "transfer_from_device", "log_loss", "train.py:57")
    assert first["after_ms"] == 0 and first["change_ms"] == -first["before_ms"] < 0
    assert [r["id"] for r in rows] == [str(i) for i in range(len(rows))]
    statuses = [r["status"] for r in rows]
    assert statuses.index("unchanged") > max(i for i, s in enumerate(statuses) if s != "unchanged")


def test_without_steps_the_view_says_so(diff):
    import dataclasses

    view = compare_view(dataclasses.replace(diff, step_time=None))
    assert view.bin_edges_ms.size == 0 and view.step_before_ms.size == 0
    assert "xlaprof.step(n)" in view.step_lines[0] and view.verdict.startswith("no steps to compare")


@pytest.mark.parametrize("search, pair", [
    ("", ("b", "c")), (None, ("b", "c")), ("?before=a&after=b", ("a", "b")), ("?after=a", ("b", "a")),
    ("?before=../../etc&after=%2e%2e", ("b", "c")), ("?before=a&before=b", ("a", "c")), ("before=a", ("b", "c")),
    ("?before=a" + "&x=1" * 100, ("b", "c")),  # more fields than any real link: the defaults
])
def test_urls_pick_listed_sessions_only(search, pair):
    assert parse_pair(search, ["c", "b", "a"]) == pair


def test_the_default_pair_is_the_two_newest():
    assert default_pair(["new", "old", "older"]) == ("old", "new")
    assert default_pair(["only"]) == ("only", "only") and default_pair([]) == (None, None)


def test_the_trend_runs_oldest_first_over_the_sessions_that_have_figures(tmp_path):
    import os

    for n, reads in enumerate((1, 2, 0)):
        run = write_session(str(tmp_path), f"run{n}", {"localhost_9012": training_capture(
            steps=6, devices=1, read_every=reads)})
        os.utime(os.path.join(run, "localhost_9012.xplane.pb"), (1_700_000_000 + n, 1_700_000_000 + n))
    write_session(str(tmp_path), "broken", {"localhost_9012": b"\x00garbage" * 10})
    listed = logdir_figures(str(tmp_path))
    series = trend_series(listed)
    assert series.run == ["run0", "run1", "run2"] and len(series) == 3
    by_run = {r.session.run: r.figures for r in listed}
    assert series.idle_pct.tolist() == pytest.approx([100 * by_run[r].idle_share for r in series.run])
    assert series.step_median_ms.tolist() == pytest.approx([by_run[r].step_median_us / 1000 for r in series.run])
    assert series.step_median_ms[0] > series.step_median_ms[2]  # a read every step makes longer steps


def test_the_app_compares_a_pair_once_and_again_when_a_session_changes(tmp_path):
    from dashboard.state import AppState

    logdir = str(tmp_path)
    before, _ = write_before_after(logdir, steps=20)
    state = AppState(logdir)
    view = state.compare("before", "after")
    assert state.compare("before", "after") is view  # the bootstrap does not run again
    write_session(logdir, "before", {"localhost_9012": training_capture(steps=30, read_every=1, seed=3)})
    changed = state.compare("before", "after")
    assert changed is not view and changed.step_before_ms.size != view.step_before_ms.size


def test_step_bins_follow_freedman_diaconis_and_put_far_outliers_in_the_last_bin():
    rng = np.random.default_rng(0)
    steps = np.concatenate([rng.uniform(47, 61, 200), [2_600.0]])  # 47-61 ms steps and one compile's step
    edges, overflow = step_bins(steps)
    q1, q3 = np.percentile(steps, [25, 75])
    width = 2 * (q3 - q1) / steps.size ** (1 / 3)
    assert np.diff(edges[:-1]) == pytest.approx(np.full(edges.size - 2, np.diff(edges[:-1])[0]))
    assert edges[1] - edges[0] == pytest.approx(width) and width < 3  # not 200 ms bins
    assert edges[0] == steps.min() and steps[:-1].max() < overflow < 2_600
    counts = np.histogram(np.minimum(steps, edges[-1]), edges)[0]
    assert counts[-1] == 1 and counts.sum() == steps.size and counts.max() < 0.3 * steps.size and counts[:-1].min() > 0
    assert step_bins(np.full(5, 50.0))[0].tolist() == [47.5, 52.5]  # no spread: one bin
    assert step_bins(np.zeros(0))[0].size == 0


def test_windows_holding_different_numbers_of_steps_compare_per_step(tmp_path):
    """One job (a read every step) captured for 10 steps, then for 60: the reads' idle time adds up
    to 6x as much in the longer window, yet per step it is the same. The page shows it per step, the
    verdict says so, and the step-time histograms are shares of each session's steps."""
    before = write_session(str(tmp_path), "before", {"localhost_9012": training_capture(steps=10, devices=2, seed=1)})
    after = write_session(str(tmp_path), "after", {"localhost_9012": training_capture(steps=60, devices=2, seed=2)})
    diff = diff_sessions(analyze(Session.load(before)), analyze(Session.load(after)))
    view, reads = compare_view(diff), diff.idle_by_cause_us["transfer_from_device"]
    assert reads.after > 5 * reads.before  # the window totals: a regression that is not one
    k = view.causes.index("transfer_from_device")
    assert view.unit == "per step" and view.after_ms[k] == pytest.approx(view.before_ms[k], rel=0.15)
    assert "the windows hold 10 and 60 steps, so idle time is compared per step" in view.verdict
    assert format_duration_change(reads.delta) not in view.verdict and " per step" in view.verdict
    histograms = [t for t in step_distributions(view).to_dict()["data"] if t["type"] == "histogram"]
    assert [t["histnorm"] for t in histograms] == ["percent", "percent"]
    assert [t["name"] for t in histograms] == ["before (10 steps)", "after (60 steps)"]
