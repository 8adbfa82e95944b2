"""The pod views on a synthetic pod whose truth is built in: seven TPU-shaped workers of 12 steps on
2 chips; ``tpu-vm-5`` spends 3 ms instead of 0.4 in its forward (Python: host tracing) every step,
``tpu-vm-6`` recompiles every step (5 ms each); all compile at step 0. So ``tpu-vm-6`` is the slowest
worker of steps 1-11 and ``tpu-vm-5`` of step 0 (every worker compiles there, it also traces
longer); each chip executes 1.5-1.55 ms per step (``TrainingShape.module_us`` + jitter)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dashboard.app import create_app
from dashboard.state import AppState
from dashboard.views.pod import (
    ALL_IDLE,
    TIMELINE_WORKERS,
    cell,
    compact_names,
    heatmap,
    pod_grid,
    slowest_summary,
    timeline_workers,
)
from tests.support.dash_requests import callback_body, output_for
from tests.support.synthetic import TrainingShape, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.report.causes import CAUSE_ROWS
from xlaprof.session import Session

STEPS, DEVICES = 12, 2
TRACER, COMPILER = "tpu-vm-5:8466", "tpu-vm-6:8466"
TYPICAL = tuple(f"tpu-vm-{i}:8466" for i in range(5))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    captures = {f"tpu-vm-{i}_8466": training_capture(steps=STEPS, devices=DEVICES, seed=i) for i in range(5)}
    captures["tpu-vm-5_8466"] = training_capture(steps=STEPS, devices=DEVICES, seed=5,
                                                 shape=TrainingShape(forward_us=3000.0))
    captures["tpu-vm-6_8466"] = training_capture(steps=STEPS, devices=DEVICES, seed=6, recompile_every=1)
    logdir = str(tmp_path_factory.mktemp("pod"))
    return logdir, write_session(logdir, "pod", captures)


@pytest.fixture(scope="module")
def analysis(logdir):
    return analyze(Session.load(logdir[1]))


@pytest.fixture(scope="module")
def grid(analysis):
    return pod_grid(analysis)


def test_each_steps_straggler_is_the_worker_built_slow_in_it(grid):
    assert grid.steps.tolist() == list(range(STEPS)) and grid.total_steps == STEPS
    slowest = [grid.workers[r] for r in grid.straggler]
    assert slowest == [TRACER] + [COMPILER] * (STEPS - 1)
    assert slowest_summary(grid) == [(COMPILER, STEPS - 1), (TRACER, 1)]
    marks = heatmap(grid)
    assert list(zip(marks.straggler_x, marks.straggler_y)) == list(zip(range(STEPS), slowest))
    assert marks.straggler_hover[3].startswith(f"step 3: slowest {COMPILER}") and "mostly compile" in \
        marks.straggler_hover[3]


def test_workers_are_grouped_by_speed_and_main_cause_and_rows_follow_the_groups(analysis, grid):
    assert [(g.band, g.cause, g.members) for g in grid.groups] == [
        ("slow", "compile", (COMPILER,)), ("slow", "host_tracing", (TRACER,)),
        ("typical", "transfer_from_device", TYPICAL)]
    assert {s.worker for s in analysis.comparison.stragglers} == {m for g in grid.groups if g.band == "slow"
                                                                  for m in g.members}
    assert grid.workers == [COMPILER, TRACER, *TYPICAL]
    assert grid.groups[0].title == "slow, mostly compile"
    assert grid.groups[0].median_step_us > grid.groups[1].median_step_us > 2 * grid.groups[2].median_step_us


def test_a_cell_is_the_idle_share_of_the_devices_time_in_the_step(grid):
    every = np.array(heatmap(grid).z)
    assert every.shape == (7, STEPS)
    # Independent of the attribution: the chips execute 1.5-1.55 ms of each step, idle the rest.
    wall = grid.wall_us[2:, 1:]  # typical workers, steps without a compile
    assert np.all(every[2:, 1:] >= 100 * (1 - 1550.0 / wall) - 0.5)
    assert np.all(every[2:, 1:] <= 100 * (1 - 1500.0 / wall) + 0.5)
    tracing = np.array(heatmap(grid, "host_tracing").z)
    compiling = np.array(heatmap(grid, "compile").z)
    assert tracing[1, 1:].min() > 25 and tracing[2:, 1:].max() < 2  # only the slow tracer's steps trace long
    assert compiling[0, 1:].min() > 50 and compiling[1:, 1:].max() == 0  # only tpu-vm-6 compiles after step 0
    assert np.allclose(sum(np.array(heatmap(grid, c).z) for c in ("compile", "transfer_from_device",
                       "transfer_to_device", "host_tracing", "host_blocked", "unattributed")), every, atol=0.1)
    assert heatmap(grid, "no-such-cause").title == heatmap(grid).title == ALL_IDLE


def test_a_clicked_cell_gives_its_range_and_figures_and_nonsense_gives_none(grid):
    detail = cell(grid, TRACER, 3)
    r = grid.workers.index(TRACER)
    assert (detail.step, detail.slowest, detail.wall_us) == (3, False, grid.wall_us[r, 3])
    assert detail.x1_us - detail.x0_us == pytest.approx(detail.wall_us)
    assert next(iter(detail.idle_by_cause_us)) == "host_tracing" and detail.vs_median > 2
    assert cell(grid, COMPILER, "3").slowest
    for worker, step in ((TRACER, 99), ("nobody", 3), (None, 3), (TRACER, None), (TRACER, "x"), (TRACER, True),
                         ([TRACER], 3), (TRACER, 1e300)):
        assert cell(grid, worker, step) is None


def test_one_worker_has_no_grid(tmp_path):
    run = write_session(str(tmp_path), "one", {"solo_9012": training_capture(steps=3, devices=1)})
    alone = analyze(Session.load(run))
    assert pod_grid(alone) is None and timeline_workers(alone, None, "solo:9012") is None  # every lane shown


def test_a_pods_timeline_shows_its_slowest_and_a_typical_worker_unless_asked_for_others(analysis, grid):
    assert timeline_workers(analysis, grid) == [COMPILER, TYPICAL[0]]
    assert timeline_workers(analysis, grid, f"{TRACER}\nnobody\n{TYPICAL[2]}\n{TRACER}") == [TRACER, TYPICAL[2]]
    for nonsense in ("", "nobody", 7, ["x"], None):
        assert timeline_workers(analysis, grid, nonsense) == [COMPILER, TYPICAL[0]]
    assert timeline_workers(analysis, None) == [w.worker.label for w in analysis.summaries[:TIMELINE_WORKERS]]


def test_names_that_differ_in_one_number_read_as_ranges():
    names = [f"tpu-vm-{i}:8466" for i in (*range(16), 17, 20, 21)]
    assert compact_names(names) == "tpu-vm-{0-15,17,20-21}:8466"
    assert compact_names(["localhost:9012", "localhost:9013", "gpu-a:1"]) == "localhost:{9012-9013}, gpu-a:1"
    assert compact_names(["h-01:1", "h-7:1"]) == "h-7:1, h-01:1"  # a zero-padded number keeps its name


def test_the_page_draws_the_section_and_its_callbacks_answer_as_the_browser_asks(logdir, grid):
    state = AppState(logdir[0])
    app = create_app(logdir[0], state)
    client = app.server.test_client()
    outputs = {t: output_for([(k, cb["inputs"]) for k, cb in app.callback_map.items()], t)
               for t in ("url.pathname", "pod-cause.value", "pod-heatmap.clickData", "gaps-table.cellClicked")}

    def post(trigger, inputs, state=()):
        response = client.post("/_dash-update-component", json=callback_body(outputs[trigger], inputs, state))
        assert response.status_code in (200, 204)
        return json.loads(response.get_data(as_text=True) or "{}").get("response", {})

    page = json.dumps(post("url.pathname", [("url", "pathname", "/session/pod"), ("url", "search", "")]))
    assert "pod-section" in page and "slow, mostly compile" in page and "tpu-vm-{0-4}:8466" in page
    assert f"Slowest worker of each step: {COMPILER} in 11, {TRACER} in 1 (of 12 steps)." in page
    figure = post("pod-cause.value", [("pod-cause", "value", "compile")], [("session-run", "data", "pod")])
    assert figure["pod-heatmap"]["figure"]["data"][0]["colorscale"][-1][1] == CAUSE_ROWS["compile"].color
    # Seven workers: the timeline opens on the slowest and a typical worker's lanes only.
    assert "lanes of tpu-vm-6:8466, tpu-vm-0:8466 only (2 of 7 workers)" in page
    assert f'"children": "{COMPILER}\\n{TYPICAL[0]}", "id": "timeline-workers"' in page
    run = [("session-run", "data", "pod"), ("flame-selection", "children", None),
           ("timeline-workers", "children", f"{COMPILER}\n{TYPICAL[0]}")]
    shown = post("pod-heatmap.clickData", [("pod-heatmap", "clickData", {"points": [{"x": 3, "y": TRACER}]})], run)
    assert f"{TRACER}, step 3" in json.dumps(shown["pod-cell"]) and shown["timeline-workers"]["children"] == TRACER
    x0, x1 = shown["timeline"]["figure"]["layout"]["xaxis"]["range"]
    assert x0 <= cell(grid, TRACER, 3).x0_us / 1000 < x1 and cell(grid, TRACER, 3).x1_us / 1000 <= x1
    lanes = {label for trace in shown["timeline"]["figure"]["data"] for label in trace.get("y", [])}
    assert lanes and all(label.startswith(TRACER) for label in lanes)
    for nonsense in (None, {}, {"points": "x"}, {"points": [{"x": "3; drop", "y": 7}]}, {"points": [None]}):
        answer = post("pod-heatmap.clickData", [("pod-heatmap", "clickData", nonsense)], run)
        assert "timeline" not in answer and "Click a cell" in json.dumps(answer)
    # A gap of a worker the timeline does not show: its lanes are shown instead; of a shown one: no change.
    first_gap = state.gaps("pod").worker_start.tolist()
    labels = [w.worker.label for w in state.entry("pod").analysis.workers]
    click = [("session-run", "data", "pod"), ("flame-selection", "children", None),
             ("timeline-workers", "children", f"{COMPILER}\n{TYPICAL[0]}")]
    gap = {"rowId": str(first_gap[labels.index(TYPICAL[4])])}
    answer = post("gaps-table.cellClicked", [("gaps-table", "cellClicked", gap)], click)
    assert answer["timeline-workers"]["children"] == TYPICAL[4]
    assert "lanes of tpu-vm-4:8466 only" in answer["timeline-status"]["children"]
    gap = {"rowId": str(first_gap[labels.index(COMPILER)])}
    answer = post("gaps-table.cellClicked", [("gaps-table", "cellClicked", gap)], click)
    assert answer["timeline-workers"]["children"] == f"{COMPILER}\n{TYPICAL[0]}"


def test_workers_that_ran_alike_have_no_straggler(tmp_path):
    """Three identical workers (the same capture): no step has a straggler, so no worker is marked
    slowest in every step for coming first in a tie."""
    same = training_capture(steps=STEPS, devices=DEVICES, seed=1)
    run = write_session(str(tmp_path), "alike", {f"tpu-vm-{i}_8466": same for i in range(3)})
    alike = pod_grid(analyze(Session.load(run)))
    assert (alike.straggler == -1).all() and slowest_summary(alike) == []
    marks = heatmap(alike)
    assert marks.straggler_x == [] and marks.straggler_hover == []
    assert not cell(alike, alike.workers[0], 3).slowest
