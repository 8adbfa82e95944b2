"""The compiled-graphs view-model and its callbacks, on a TPU-shaped session with exact truth: a
batch-size cycle of five programs (tests/support/hlo_builder.py), each run on two devices."""
from __future__ import annotations

import json

import pytest

from dashboard.app import create_app
from dashboard.state import AppState
from dashboard.views.graphs import compile_detail, graph_rows, line_rows, op_rows, op_text
from dashboard.views.overview import compile_rows, overview
from tests.support.dash_requests import callback_body, output_for
from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.synthetic import StepProgram, TrainingShape, training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.session import Session

BATCHES = (8, 12, 16, 20, 24)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("graphs"))
    ops = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
    programs = {b: StepProgram(100 + b, f"{b:032x}", mlp_module(100 + b, b), ops) for b in BATCHES}
    write_session(root, "hlo", {"localhost_9012": training_capture(
        steps=10, devices=2, programs=[programs[b] for b in BATCHES * 2], shape=TrainingShape(jitter_us=0))})
    write_session(root, "plain", {"localhost_9012": training_capture(steps=4, devices=1)})
    return root


@pytest.fixture(scope="module")
def analysis(logdir):
    return analyze(Session.load(f"{logdir}/plugins/profile/hlo"))


def test_graph_and_op_rows(analysis):
    graphs = graph_rows(analysis)
    assert sorted(g["program"] for g in graphs) == [100 + b for b in BATCHES]
    assert all(g["runs"] == 4 and g["total_ms"] == 6.0 and g["median_ms"] == 1.5 for g in graphs)  # 2 runs x 2 chips
    assert all(g["busy_pct"] == 20.0 and g["span"] == "train_step" and g["compiled"] == "in window" for g in graphs)
    ops = op_rows(analysis, "0")
    assert [o["op"] for o in ops] == list(MLP_OPS)
    assert ops[0] == {"op": "dot.1", "category": "dot", "runs": 4, "self_ms": 2.16, "total_ms": 2.16,
                      "share_pct": 40.0, "source": "train.py:15"}
    for bad in (None, "", "x", "-1", "5", "1e3"):
        assert op_rows(analysis, bad) is None and op_text(analysis, bad, "0") is None
    assert op_text(analysis, "0", "99") is None


def test_op_text_and_lines(analysis):
    program = graph_rows(analysis)[2]["program"]
    text = op_text(analysis, "2", "1")  # add_relu_fusion of that graph
    assert text.startswith(f"%add_relu_fusion = f32[{program - 100},64] fusion(") and "calls=%fused_" in text
    assert {row["source"] for row in line_rows(analysis)} == {"train.py:15", "train.py:17"}


def test_compile_rows_say_what_changed_and_the_detail_explains(analysis):
    rows = compile_rows(analysis)
    assert [r["program"] for r in rows] == [100 + b for b in BATCHES]
    assert rows[1]["changed"] == "input 0: f32[8,256] -> f32[12,256]"
    detail = compile_detail(analysis, rows, "1")
    assert detail.title.endswith("in train_step (program 112)") and detail.changed == rows[1]["changed"]
    assert detail.explanation.summary.endswith("B = 8, 12, 16, 20, 24 across 5 compiles.")
    assert "nothing to compare it with" in compile_detail(analysis, rows, "0").changed
    assert compile_detail(analysis, rows, "7") is None and compile_detail(analysis, rows, None) is None
    assert overview(analysis).compiles_before is None  # a synthetic capture carries no metrics


def _text(component) -> str:
    """The text of a serialized Dash component tree."""
    if isinstance(component, list):
        return "".join(_text(c) for c in component)
    if isinstance(component, dict):
        return _text(component.get("props", {}).get("children", ""))
    return "" if component is None else str(component)


def _call(client, app, trigger: str, inputs, state):
    (key,) = [k for k, cb in app.callback_map.items()
              if trigger in [f"{i['id']}.{i['property']}" for i in cb["inputs"]]]
    response = client.post("/_dash-update-component", json=callback_body(key, inputs, state))
    return response.status_code, response.get_data(as_text=True)


def test_the_page_and_its_callbacks(logdir):
    app = create_app(logdir, AppState(logdir))
    client = app.server.test_client()
    page = output_for([(k, cb["inputs"]) for k, cb in app.callback_map.items()], "url.pathname")
    text = client.post("/_dash-update-component", json=callback_body(
        page, [("url", "pathname", "/session/hlo"), ("url", "search", "")])).get_data(as_text=True)
    for element in ("graphs-table", "ops-table", "hlo-text", "lines-table", "recompiles", "compile-detail"):
        assert f'"id": "{element}"' in text or f'"id":"{element}"' in text, element
    status, body = _call(client, app, "graphs-table.cellClicked", [("graphs-table", "cellClicked", {"rowId": "3"})],
                         [("session-run", "data", "hlo")])
    assert status == 200 and '"add_relu_fusion"' in body and "Ops of train_step [B=20] on localhost:9012" in body
    status, body = _call(client, app, "ops-table.cellClicked", [("ops-table", "cellClicked", {"rowId": "4"})],
                         [("ops-graph", "data", 3), ("session-run", "data", "hlo")])
    assert status == 200 and "%copy.1 = f32[256,64] copy(" in json.loads(body)["response"]["hlo-text"]["children"]
    status, body = _call(client, app, "compiles-table.cellClicked",
                         [("compiles-table", "cellClicked", {"rowId": "2"})], [("session-run", "data", "hlo")])
    shown = _text(json.loads(body)["response"]["compile-detail"]["children"])
    assert status == 200 and "Changed vs the previous graph of this place: input 0: f32[12,256] -> f32[16,256]" in shown
    # Hostile or stale clicks change nothing and break nothing.
    for run, click in (("hlo", {"rowId": "<script>"}), ("hlo", "junk"), ("../../etc", {"rowId": "1"})):
        status, _ = _call(client, app, "graphs-table.cellClicked", [("graphs-table", "cellClicked", click)],
                          [("session-run", "data", run)])
        assert status in (200, 204)
    text = client.post("/_dash-update-component", json=callback_body(
        page, [("url", "pathname", "/session/plain"), ("url", "search", "")])).get_data(as_text=True)
    assert "No compiled graph ran in this capture" in text and '"id": "ops-table"' not in text


def test_without_a_debug_file_compile_rows_say_what_the_analysis_knows_and_name_graphs_apart(analysis):
    rows = compile_rows(analysis)
    assert all(r["trigger"] == "" and r["source"] == "train.py:30" for r in rows)  # no torch_xla trigger to show
    assert rows[0]["cause"] == "first graph of its place"
    # the cause in a word, what changed in its own column: no text twice
    assert rows[1]["cause"] == "new graph" and rows[1]["changed"] == "input 0: f32[8,256] -> f32[12,256]"
    assert all("PT_XLA_DEBUG_FILE" in r["cause_tip"] for r in rows)
    # graphs are named by their place and the input size that tells them apart; XLA's name is a detail
    assert [r["graph"] for r in rows] == [f"train_step [B={b}]" for b in BATCHES]
    assert rows[1]["xla"] == f"SyncTensorsGraph.93 · program 112 · hash {12:032x}"
    graphs = graph_rows(analysis)
    assert sorted(g["graph"] for g in graphs) == sorted(f"train_step [B={b}]" for b in BATCHES)
    assert all(g["span_source"] == "train.py:30" and "source" not in g for g in graphs)
