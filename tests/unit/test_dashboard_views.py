"""timeline_view, gap_table and session_overview: what the dashboard draws, computed off an analysis."""
from __future__ import annotations

import numpy as np
import pytest

from dashboard.views.axis import worker_offsets
from dashboard.views.gap_table import gap_columns, gap_page, gap_range
from dashboard.views.overview import compile_rows, overview, session_row, step_series, worker_rows
from dashboard.views.timeline import (
    BUSY,
    CATEGORIES,
    MIN_RANGE_US,
    ViewConfig,
    clamp_range,
    parse_range_query,
    parse_relayout,
    session_timeline,
    view,
)
from tests.support.synthetic import XSpaceBuilder, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.common import intervals
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.report import analysis_json
from xlaprof.session import Session
from xlaprof.xspace import vocabulary


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("views")
    run = write_session(str(logdir), "train", {"localhost_9012": training_capture(
        steps=60, devices=4, read_every=1, recompile_every=20)})
    return analyze(Session.load(run))


@pytest.fixture(scope="module")
def timeline(analysis):
    return session_timeline(analysis)


def test_lanes_are_devices_then_host_activity(timeline):
    labels = [lane.label for lane in timeline.lanes]
    assert labels[:4] == ["TPU:0", "TPU:1", "TPU:2", "TPU:3"]
    assert labels[4:] == ["host: compile", "host: transfer_from_device", "host: transfer_to_device",
                          "training thread · spans depth 0", "training thread · spans depth 1"]
    compile_lane = timeline.lanes[labels.index("host: compile")]
    assert compile_lane.start.size == 3  # steps 0, 20, 40


def test_span_lanes_are_named_by_thread_and_depth(tmp_path):
    builder = XSpaceBuilder()
    host = builder.plane(vocabulary.HOST_PLANE)
    # The other thread comes first in the capture: the training thread is the one its spans fill.
    autograd = host.line("pt_autograd_0", line_id=7)
    python = host.line("python", line_id=1)
    modules = builder.plane("/device:TPU:0").line("XLA Modules", line_id=1)
    for step in range(3):
        t = 1000.0 * step
        python.event("train_step", t, 900.0, step_num=step, source="train.py:30")
        python.event("forward", t + 10, 300.0, source="train.py:42")
        autograd.event("backward_hook", t + 400, 50.0, source="model.py:12")
        modules.event("SyncTensorsGraph.1", t + 500, 300.0)
    run = write_session(str(tmp_path), "threads", {"localhost_9012": builder.to_bytes()})
    analysis = analyze(Session.load(run))
    lanes = {lane.label: lane for lane in session_timeline(analysis).lanes}
    assert [label for label in lanes if "spans" in label] == [
        "training thread · spans depth 0", "training thread · spans depth 1", "pt_autograd_0 · spans depth 0"]
    names = lambda label: {lanes[label].names[n] for n in lanes[label].name}  # noqa: E731
    assert names("training thread · spans depth 0") == {"train_step"}
    assert names("training thread · spans depth 1") == {"forward"}
    assert names("pt_autograd_0 · spans depth 0") == {"backward_hook"}


def test_a_busy_range_is_binned_and_bounded(timeline):
    config = ViewConfig(max_raw=50, bins=100)
    v = view(timeline, config=config)
    assert v.binned_lanes >= 4
    assert len(v) <= len(timeline.lanes) * max(config.max_raw, config.bins)
    assert (v.start >= v.x0 - 1e-6).all() and (v.end <= v.x1 + 1e-6).all()
    assert all("zoom in" in h for h, lane in zip(v.hover, v.lane) if v.labels[lane] == "TPU:0")


def test_binned_busy_bars_sit_on_real_device_activity(analysis, timeline):
    v = view(timeline, config=ViewConfig(max_raw=0, bins=400))
    device = analysis.workers[0].devices[0]
    busy = (v.lane == 0) & (v.category == BUSY)
    s, e, opacity = v.start[busy], v.end[busy], v.opacity[busy]
    assert s.size
    covered = intervals.measure_before(device.busy_starts, device.busy_ends, e) - \
        intervals.measure_before(device.busy_starts, device.busy_ends, s)
    # Opacity is the covered share rounded up to a quarter (at least 0.35 to stay visible).
    assert (covered > 0).all()
    assert (covered >= (opacity - 0.25) * (e - s) - 1e-6).all()


def test_zooming_in_gives_every_item_with_its_details(analysis, timeline):
    lane = timeline.lanes[0]
    x0, x1 = float(lane.start[40]), float(lane.start[60])
    v = view(timeline, x0, x1, ViewConfig(max_raw=1000))
    assert v.binned_lanes == 0
    mine = v.lane == 0
    expected = int(((lane.end > x0) & (lane.start < x1)).sum())
    assert int(mine.sum()) == expected
    hover = [h for h, m in zip(v.hover, mine) if m]
    assert any(h.startswith("idle: transfer_from_device") and "span: log_loss" in h and "train.py:57" in h
               for h in hover)
    assert any(h.startswith("SyncTensorsGraph.123") for h in hover)


def test_every_category_is_known(timeline):
    v = view(timeline)
    assert set(np.unique(v.category)) <= set(range(len(CATEGORIES)))


@pytest.mark.parametrize("x0,x1", [(None, None), (5.0, 1.0), (float("nan"), 3.0), (0.0, float("inf")), (-1e30, 1e30)])
def test_bad_ranges_fall_back_to_the_session(timeline, x0, x1):
    lo, hi = clamp_range(timeline, x0, x1)
    assert lo < hi and lo >= timeline.extent[0] - 0.05 * (timeline.extent[1] - timeline.extent[0]) - 1e-9


def test_a_tiny_range_is_widened_to_the_minimum(timeline):
    lo, hi = clamp_range(timeline, 100.0, 100.0 + 1e-9)
    assert hi - lo == pytest.approx(MIN_RANGE_US)


@pytest.mark.parametrize("relayout,expected", [
    ({"xaxis.range[0]": 1.5, "xaxis.range[1]": 2.5}, (1500.0, 2500.0)),
    ({"xaxis.range": ["1", "2"]}, (1000.0, 2000.0)),
    ({"xaxis.autorange": True}, "reset"),
    ({"autosize": True}, None), (None, None), ("junk", None), ([1, 2], None),
    ({"xaxis.range[0]": "x", "xaxis.range[1]": 2}, None), ({"xaxis.range": [3, 1]}, None),
    ({"xaxis.range": [float("nan"), 1]}, None), ({"xaxis.range": [True, 5]}, None),
    ({"xaxis.range": {"a": 1}}, None), ({"xaxis.range[0]": "1e400", "xaxis.range[1]": "2"}, None),
])
def test_parse_relayout_accepts_anything(relayout, expected):
    assert parse_relayout(relayout) == expected


@pytest.mark.parametrize("search,expected", [
    ("?from_ms=1&to_ms=2", (1000.0, 2000.0)), ("", None), ("?from_ms=abc&to_ms=2", None),
    ("?from_ms=%ff%00&to_ms=1e999", None), ("?to_ms=1", None), (None, None), (12, None),
    ("?" + "&".join(f"k{i}=1" for i in range(50)), None), ("?from_ms=" + "9" * 5000, None),
])
def test_parse_range_query_accepts_anything(search, expected):
    assert parse_range_query(search) == expected


def test_workers_are_aligned_on_their_origins(tmp_path):
    capture = training_capture(steps=3, devices=1)
    run = write_session(str(tmp_path), "two", {"a_1": capture, "b_1": capture})
    session = Session.load(run)
    session.workers[1].space.origin_ns += 2_000_000  # the second worker's clock starts 2 ms later
    analysis = analyze(session)
    assert worker_offsets(analysis) == [0.0, 2000.0]
    lanes = {lane.label: lane for lane in session_timeline(analysis).lanes}
    first, second = (lanes[f"{w.worker.label} TPU:0"] for w in analysis.workers)
    assert second.start == pytest.approx(first.start + 2000.0)


def _request(start=0, end=15, sort=None, filters=None) -> dict:
    """A getRowsRequest as AG Grid's infinite row model sends it."""
    return {"startRow": start, "endRow": end, "sortModel": sort or [], "filterModel": filters or {}}


def text_filter(kind: str, value: str) -> dict:
    return {"filterType": "text", "type": kind, "filter": value}


def number_filter(kind: str, value: float, to: float | None = None) -> dict:
    return {"filterType": "number", "type": kind, "filter": value, **({"filterTo": to} if to is not None else {})}


DESC = [{"colId": "dur_ms", "sort": "desc"}]


def test_gap_table_pages_through_every_gap_in_order(analysis):
    gaps = gap_columns(analysis)
    pieces = analysis.workers[0].pieces
    assert len(gaps) == len(pieces) > 100
    seen, durations = [], []
    for start in range(0, len(gaps), 15):
        page = gap_page(gaps, _request(start, start + 15, DESC))
        assert page.matching == len(gaps) and page.problem is None
        assert len(page.rows) == min(15, len(gaps) - start)  # a broken offset repeats or drops rows
        seen += [int(r["id"]) for r in page.rows]
        durations += [r["dur_ms"] for r in page.rows]
    assert sorted(seen) == list(range(len(gaps)))  # every gap exactly once
    assert durations == sorted(durations, reverse=True)
    assert durations[0] == pytest.approx(pieces.dur_us.max() / 1000, abs=1e-4)


def test_gap_table_filters_as_an_independent_count_says(analysis):
    gaps = gap_columns(analysis)
    pieces = analysis.workers[0].pieces
    compile_code = [c.value for c in CAUSES].index("compile")
    expected = int(((pieces.cause == compile_code) & (pieces.dur_us > 1000)).sum())
    assert expected == 3 * 4  # three compiles, each idling four devices
    compiles = gap_page(gaps, _request(0, 500, filters={"cause": text_filter("contains", "COMPILE"),
                                                        "dur_ms": number_filter("greaterThan", 1)}))
    assert compiles.matching == expected and compiles.problem is None
    assert len(compiles.rows) == expected and all(r["cause"] == "compile" and r["dur_ms"] > 1 for r in compiles.rows)
    reads = gap_page(gaps, _request(0, 500, [{"colId": "start_ms", "sort": "asc"}],
                                    {"span": text_filter("equals", "log_loss")}))
    spans = analysis.workers[0].host.spans
    assert reads.matching == sum(spans.name[s] == "log_loss" for s in pieces.span if s >= 0) > 0
    assert all(r["span"] == "log_loss" and r["source"] == "train.py:57" for r in reads.rows)
    starts = [r["start_ms"] for r in reads.rows]
    assert starts == sorted(starts)
    # Two conditions of one column, and a range.
    either = gap_page(gaps, _request(filters={"cause": {"filterType": "text", "operator": "OR", "conditions": [
        text_filter("equals", "compile"), text_filter("startsWith", "transfer_from")]}}))
    assert either.matching == int(np.isin(pieces.cause, [compile_code, [c.value for c in CAUSES].index(
        "transfer_from_device")]).sum())
    lo, hi = 1.0, 2.0
    ranged = gap_page(gaps, _request(filters={"dur_ms": number_filter("inRange", lo, hi)}))
    assert ranged.matching == int(((pieces.dur_us >= lo * 1000) & (pieces.dur_us <= hi * 1000)).sum()) > 0
    nothing = gap_page(gaps, _request(filters={"span": text_filter("contains", "no such span")}))
    assert nothing.matching == 0 and nothing.rows == []


def test_gap_table_sorts_by_several_columns(analysis):
    gaps = gap_columns(analysis)
    page = gap_page(gaps, _request(0, 500, [{"colId": "device", "sort": "desc"}, {"colId": "start_ms", "sort": "asc"}]))
    keys = [(r["device"], -r["start_ms"]) for r in page.rows]
    assert keys == sorted(keys, reverse=True) and page.rows[0]["device"] == "TPU:3"


@pytest.mark.parametrize("request_,rows,problem", [
    ({"filterModel": {"nope": text_filter("contains", "x")}}, 100, True),  # unknown column
    ({"filterModel": {"dur_ms": number_filter("greaterThan", "abc")}}, 100, True),  # not a number
    ({"filterModel": {"dur_ms": {"type": "sideways", "filter": 1}}}, 100, True),
    ({"filterModel": {"cause": {"type": ["contains"], "filter": {"a": 1}}}}, 100, True),  # unhashable type
    ({"filterModel": {"cause": {"operator": "XOR", "conditions": [text_filter("contains", "c")]}}}, 100, True),
    ({"filterModel": {"cause": {"operator": "AND", "conditions": "x"}}}, 100, True),
    ({"filterModel": {"span": "junk", "source": None}}, 100, True),
    ({"filterModel": [1, 2], "sortModel": {"colId": "x"}}, 100, False),
    ({"sortModel": [1, {"colId": 3}, {"colId": ["dur_ms"]}, {"colId": "span", "sort": "sideways"}]}, 100, False),
    ({"startRow": "x", "endRow": "y"}, 100, False), ({"startRow": -5, "endRow": -1}, 1, False),
    ({"startRow": 10**12, "endRow": 10**13}, 0, False), ({"startRow": 0, "endRow": 10**12}, 500, False),
    ({"startRow": True, "endRow": 1e400}, 100, False), ("junk", 100, False), (None, 100, False),
])
def test_gap_table_ignores_what_it_cannot_read_and_keeps_every_gap(analysis, request_, rows, problem):
    gaps = gap_columns(analysis)
    result = gap_page(gaps, request_)
    # An unreadable filter filters nothing (and says so); unreadable row numbers fall back to defaults.
    assert result.matching == len(gaps) and len(result.rows) == min(rows, len(gaps))
    assert (result.problem is not None) == problem


def test_gap_range_frames_the_gap(analysis):
    gaps = gap_columns(analysis)
    lo, hi = gap_range(gaps, 5)
    assert lo < gaps.start_us[5] and hi > gaps.start_us[5] + gaps.dur_us[5]
    assert gap_range(gaps, "nope") is None and gap_range(gaps, -1) is None and gap_range(gaps, len(gaps)) is None


def test_overview_agrees_with_the_json_report(analysis):
    report = analysis_json(analysis)
    ov = overview(analysis)
    assert ov.idle_us == pytest.approx(report["device_idle_us"])
    assert ov.busy_us == pytest.approx(report["device_busy_us"])
    assert ov.idle_by_cause_us == pytest.approx(report["idle_by_cause_us"])
    assert ov.compiles == 3 and ov.reads == 60
    assert ov.read_top_spans[0] == ("log_loss", 60)
    assert len(compile_rows(analysis)) == 3


def test_step_series_and_worker_rows_add_up(analysis):
    series = step_series(analysis)
    steps = analysis.workers[0].steps
    assert list(series.step) == sorted(steps.step.tolist())
    assert series.busy_us.sum() == pytest.approx(steps.busy_us.sum())
    assert sum(v.sum() for v in series.idle_us.values()) == pytest.approx(steps.idle_us.sum())
    (row,) = worker_rows(analysis)
    assert row["steps"] == 60 and 0 < row["idle_pct"] < 100


def test_session_row_reports_errors_without_figures():
    from xlaprof.analysis.pipeline.summary import ListedSession
    from xlaprof.session import SessionSummary

    row = session_row(ListedSession(SessionSummary("/x", "run", 0.0, ["w"], {}), None, "broken"))
    assert row["error"] == "broken" and row["idle_pct"] is None and row["step_median_us"] is None


def test_many_steps_are_grouped_into_mean_steps(analysis):
    full = step_series(analysis)
    grouped = step_series(analysis, max_bars=7)
    assert grouped.group == 9 and grouped.step.size == 7  # 60 steps in groups of 9
    assert list(grouped.step) == list(full.step[::9])
    assert grouped.busy_us[0] == pytest.approx(full.busy_us[:9].mean())
    assert grouped.idle_us["compile"][-1] == pytest.approx(full.idle_us["compile"][54:].mean())
