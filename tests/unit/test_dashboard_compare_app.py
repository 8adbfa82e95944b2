"""The compare page and the sessions trend in the Dash app, in-process: routing, picking sessions,
hostile or malformed input, and a restart that lists from the persisted index without analysing."""
from __future__ import annotations

import json

import pytest

from dashboard.app import create_app
from dashboard.state import AppState
from tests.support.dash_requests import callback_body
from tests.support.synthetic import training_capture, write_before_after, write_session


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> str:
    logdir = str(tmp_path_factory.mktemp("compare_app"))
    write_before_after(logdir)
    return logdir


@pytest.fixture(scope="module")
def client(logdir):
    return create_app(logdir, AppState(logdir)).server.test_client()


def call(client, output: str, inputs: list) -> tuple[int, str]:
    response = client.post("/_dash-update-component", json=callback_body(output, inputs))
    text = response.get_data(as_text=True)
    return response.status_code, json.dumps(json.loads(text), ensure_ascii=False) if response.status_code == 200 else text


def route(client, pathname, search=""):
    return call(client, "page.children", [("url", "pathname", pathname), ("url", "search", search)])


def test_the_compare_page_shows_the_verdict_causes_distributions_and_findings(client):
    status, text = route(client, "/compare", "?before=before&after=after")
    assert status == 200
    for element in ("compare-before", "compare-after", "compare-verdict", "compare-causes", "compare-steps",
                    "compare-findings"):
        assert f'"id": "{element}"' in text, element
    assert "the read at log_loss (train.py:57) is gone" in text
    assert '"status": "resolved", "kind": "transfer_from_device", "span": "log_loss"' in text


def test_picking_sessions_redraws_the_body_and_unknown_ones_say_not_found(client):
    status, text = call(client, "compare-body.children", [("compare-before", "value", "after"),
                                                           ("compare-after", "value", "before")])
    assert status == 200 and "a new read at log_loss (train.py:57) costs " in text
    for hostile in ("../../etc/passwd", None, 7, {"x": 1}, "%2e%2e"):
        status, text = call(client, "compare-body.children", [("compare-before", "value", hostile),
                                                               ("compare-after", "value", "after")])
        assert status == 200 and '"id": "not-found"' in text and "Traceback" not in text


@pytest.mark.parametrize("search", ["?before=nope", "?before=%00&after=../x", "?" + "a" * 5000, 12])
def test_malformed_queries_fall_back_to_the_two_newest(client, search):
    status, text = route(client, "/compare", search)
    assert status == 200 and "compare-verdict" in text


def test_the_sessions_page_has_the_trend_and_a_link_to_compare(client):
    status, text = route(client, "/")
    assert status == 200
    assert '"id": "trend-chart"' in text and '"id": "compare-link"' in text and "Median step" in text
    assert '"name": "device idle share (%)"' in text and '"name": "median step (ms)"' in text


def test_one_session_has_nothing_to_compare_and_no_trend(tmp_path):
    write_session(str(tmp_path), "only", {"localhost_9012": training_capture(steps=4, devices=1)})
    client = create_app(str(tmp_path), AppState(str(tmp_path))).server.test_client()
    assert "Nothing to compare yet" in route(client, "/compare")[1]
    text = route(client, "/")[1]
    assert "trend-chart" not in text and "compare-link" not in text and "/session/only" in text


def test_a_restarted_dashboard_lists_from_the_index_without_analysing(tmp_path):
    for n in range(3):
        write_session(str(tmp_path), f"run{n}", {"localhost_9012": training_capture(steps=4, devices=1, seed=n)})
    first = AppState(str(tmp_path))
    route(create_app(str(tmp_path), first).server.test_client(), "/")
    assert first.cache.loads == 3
    restarted = AppState(str(tmp_path))
    status, text = route(create_app(str(tmp_path), restarted).server.test_client(), "/")
    assert status == 200 and all(f"/session/run{n}" in text for n in range(3)) and "trend-chart" in text
    assert restarted.cache.loads == 0
