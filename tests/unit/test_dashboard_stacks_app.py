"""The session page's Python stacks through the app's callbacks, as the browser posts them: the idle
flame graph and its selection, the gaps grid's stack filter, the timeline's gap markers, a clicked
gap's stack panel. The ``sampled`` run of the demo logdir has stacks: per step ``train.py:30
train_step`` (under ``train.py:100 <module>``), inside it ``:42 forward`` and the read in
``:57 log_loss`` (above torch's ``item``); the ``train`` run has none."""
from __future__ import annotations

import json

import pytest

from dashboard.app import create_app
from dashboard.state import AppState
from dashboard.views.flame import ROOT, frame_filter
from tests.support.dash_requests import callback_body, output_for
from tests.support.dashboard_harness import DEMO_SCRIPT, write_demo_logdir

MODULE, STEP = f"{DEMO_SCRIPT}:100 <module>", f"{DEMO_SCRIPT}:30 train_step"
LOG_LOSS = f"{MODULE}\n{STEP}\n{DEMO_SCRIPT}:57 log_loss"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("stacks-app") / "logdir"
    write_demo_logdir(logdir, steps=20)
    state = AppState(str(logdir))
    app = create_app(str(logdir), state)
    outputs = {trigger: output_for([(key, cb["inputs"]) for key, cb in app.callback_map.items()], trigger)
               for trigger in ("url.pathname", "flame.clickData", "flame-selection.children", "gaps-table.cellClicked",
                               "gaps-table.getRowsRequest", "timeline.relayoutData")}
    return app.server.test_client(), state, outputs


def post(setup, trigger: str, inputs, state=(), changed=None) -> tuple[int, dict | str]:
    client, _, outputs = setup
    response = client.post("/_dash-update-component", json=callback_body(outputs[trigger], inputs, state, changed))
    text = response.get_data(as_text=True)
    return response.status_code, json.loads(text)["response"] if response.status_code == 200 else text


def page(setup, run: str) -> str:
    status, response = post(setup, "url.pathname", [("url", "pathname", f"/session/{run}"), ("url", "search", "")])
    assert status == 200
    return json.dumps(response, ensure_ascii=False)


def select(setup, click, clear=None, run="sampled", selected=None):
    return post(setup, "flame.clickData", [("flame", "clickData", click), ("flame-clear", "n_clicks", clear)],
                [("flame-selection", "children", selected), ("session-run", "data", run)],
                changed="flame-clear.n_clicks" if clear else None)


def apply(setup, frame, model=None, run="sampled"):
    return post(setup, "flame-selection.children", [("flame-selection", "children", frame)],
                [("gaps-table", "filterModel", model), ("session-run", "data", run), ("timeline-workers", "children", None)])


def idle_lanes(figure: dict) -> dict[str, set[str]]:
    """Per trace (a category), the device lanes it has bars on: the idle markers by cause."""
    return {trace["name"]: {y for y in trace["y"] if "TPU" in y} for trace in figure["data"]
            if trace["name"] != "device busy" and any("TPU" in y for y in trace["y"])}


def test_a_sampled_session_shows_the_flame_graph_the_line_table_and_the_stacks(setup):
    text = page(setup, "sampled")
    assert '"flame-section"' in text and '"type": "icicle"' in text and '"idle-lines-table"' in text
    assert json.dumps(LOG_LOSS)[1:-1] in text  # an icicle node's id: the frames from the outermost one
    assert '"stack-panel"' in text and "Click a gap in the gaps table" in text
    assert '"finding-stack"' in text and "Python stack (3 frames, outermost first)" in text


def test_a_session_without_stacks_says_why_instead_of_an_empty_chart(setup):
    text = page(setup, "train")
    assert '"flame-empty"' in text and "no Python stacks in the capture of localhost:9012" in text
    assert '"icicle"' not in text and '"idle-lines-table"' not in text


def test_a_click_on_a_frame_selects_it_and_clear_zooms_out(setup):
    status, response = select(setup, {"points": [{"id": LOG_LOSS, "label": "train.py:57 log_loss",
                                                   "entry": "all idle time with a Python line"}]})
    assert status == 200 and response["flame-selection"]["children"] == LOG_LOSS and "flame" not in response
    again = select(setup, {"points": [{"id": LOG_LOSS}]}, selected=LOG_LOSS)[1]  # the top bar: zoom out
    assert again["flame-selection"]["children"] == f"{MODULE}\n{STEP}"
    # The icicle opens at train_step (all idle time passes through it): with nothing selected, it is
    # the top bar, and a click on it zooms out to <module>.
    opened = select(setup, {"points": [{"id": f"{MODULE}\n{STEP}"}]})[1]
    assert opened["flame-selection"]["children"] == MODULE
    status, response = select(setup, {"points": [{"id": LOG_LOSS}]}, clear=1)
    assert response["flame-selection"]["children"] is None
    assert response["flame"]["figure"]["data"][0]["level"] == f"{MODULE}\n{STEP}"
    for junk in ("x", {"points": "x"}, {"points": [{"id": ["x"]}]}):
        assert select(setup, junk)[0] == 204  # not a click on a frame: nothing changes
    assert select(setup, None, clear=1, run="../../etc")[1] == {"flame-selection": {"children": None}}


def test_a_selected_frame_filters_the_gaps_grid_and_the_timeline(setup):
    _, state, _ = setup
    every = apply(setup, None)[1]
    assert idle_lanes(every["timeline"]["figure"]).keys() >= {"compile", "transfer_from_device"}
    user_filter = {"dur_ms": {"filterType": "number", "type": "greaterThanOrEqual", "filter": 0}}
    status, response = apply(setup, LOG_LOSS, {**user_filter, "stack": {"type": "contains", "filter": "old"}})
    assert status == 200
    model = response["gaps-table"]["filterModel"]
    assert model == {**user_filter, "stack": frame_filter(LOG_LOSS)}  # the user's other filters stay
    assert idle_lanes(response["timeline"]["figure"]) == {"transfer_from_device": {"TPU:0", "TPU:1"}}
    assert "gaps under train.py:57 log_loss only" in response["timeline-status"]["children"]
    assert response["flame-status"]["children"] == "Showing only the gaps under train.py:57 log_loss."
    # The grid then asks for its rows with that filter: only the read's gaps, all of them.
    status, rows = post(setup, "gaps-table.getRowsRequest", [("gaps-table", "getRowsRequest", {
        "startRow": 0, "endRow": 500, "filterModel": model})], [("session-run", "data", "sampled")])
    block = rows["gaps-table"]["getRowsResponse"]
    reads = [n for n in state.flame("sampled").nodes if n.id == LOG_LOSS][0]
    assert block["rowCount"] == reads.pieces == 40  # 20 steps, 2 devices
    assert {(r["source"], r["cause"]) for r in block["rowData"]} == {(f"{DEMO_SCRIPT}:57", "transfer_from_device")}
    # A zoom keeps the selection; clearing it brings every gap back and drops only the stack filter.
    zoom = post(setup, "timeline.relayoutData", [("timeline", "relayoutData", {"xaxis.autorange": True}),
                                                 ("timeline-reset", "n_clicks", None)],
                [("session-run", "data", "sampled"), ("flame-selection", "children", LOG_LOSS),
                 ("timeline-workers", "children", None)])[1]
    assert idle_lanes(zoom["timeline"]["figure"]) == {"transfer_from_device": {"TPU:0", "TPU:1"}}
    cleared = apply(setup, None, model)[1]
    assert cleared["gaps-table"]["filterModel"] == user_filter
    assert cleared["flame-status"]["children"] == "Click a frame to see only its gaps."
    for junk in (5, ROOT, ["x"], f"{MODULE}\n(smaller frames)"):
        assert apply(setup, junk, model)[1]["gaps-table"]["filterModel"] == user_filter


def test_a_clicked_gap_shows_its_stack_beside_the_timeline(setup):
    _, state, _ = setup
    gaps = state.gaps("sampled")
    read = next(i for i in range(len(gaps)) if gaps.labels["stack"][1][gaps.labels["stack"][0][i]] == LOG_LOSS)
    status, response = post(setup, "gaps-table.cellClicked", [("gaps-table", "cellClicked", {"rowId": str(read)})],
                            [("session-run", "data", "sampled"), ("flame-selection", "children", None),
                             ("timeline-workers", "children", None)])
    assert status == 200
    panel = json.dumps(response["stack-panel"]["children"])
    assert "idle on TPU:" in panel and "transfer_from_device" in panel
    for label in ("train.py:100 <module>", "train.py:30 train_step", "train.py:57 log_loss", "_tensor.py:1020 item"):
        assert label in panel
    assert panel.count("frame frame-user") == 3 and panel.count("frame frame-framework") == 1
    assert panel.count("frame-source") == 1
    assert post(setup, "gaps-table.cellClicked", [("gaps-table", "cellClicked", {"rowId": "x"})],
                [("session-run", "data", "sampled"), ("flame-selection", "children", None),
                             ("timeline-workers", "children", None)])[0] == 204
