"""The Dash app in-process: routing, hostile requests, malformed callback input, serve()'s warnings.

Callbacks are exercised the way the browser calls them: a POST to ``/_dash-update-component``.
"""
from __future__ import annotations

import json
import os

import pytest

from dashboard import server
from dashboard.app import create_app
from dashboard.state import AppState
from tests.support.dash_requests import callback_body, output_for
from tests.support.dashboard_harness import write_demo_logdir

SECRET = "TOP-SECRET-8d2e71"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("app")
    logdir = root / "logdir"
    write_demo_logdir(logdir, steps=20)
    (root / "secret.txt").write_text(SECRET)
    state = AppState(str(logdir))
    app = create_app(str(logdir), state)
    global ZOOM, GAP_CLICK
    ZOOM, GAP_CLICK = (_output_of(app, trigger) for trigger in ("timeline.relayoutData", "gaps-table.cellClicked"))
    return app.server.test_client(), state


def _output_of(app, trigger: str) -> str:
    """The output key of the callback that ``trigger`` fires (it carries a hash where outputs repeat)."""
    return output_for([(key, cb["inputs"]) for key, cb in app.callback_map.items()], trigger)


def call(client, output: str, inputs: list[tuple[str, str, object]], state=(), changed=None):
    """POST one callback request as dash-renderer does; returns (status, JSON text)."""
    response = client.post("/_dash-update-component", json=callback_body(output, inputs, state, changed))
    text = response.get_data(as_text=True)
    # Dash escapes "/" in its JSON; re-encode so that tests can look for paths.
    return response.status_code, json.dumps(json.loads(text), ensure_ascii=False) if response.status_code == 200 else text


def route(client, pathname: object, search: object = ""):
    return call(client, "page.children", [("url", "pathname", pathname), ("url", "search", search)])


def test_the_sessions_page_lists_every_session_and_the_broken_one_in_its_row(setup):
    client, _ = setup
    status, text = route(client, "/")
    assert status == 200
    for run in ("train", "multi", "broken", "badmanifest"):  # one bad manifest hides nothing
        assert f"/session/{run}" in text
    assert "sessions-table" in text and "row-error" in text and "manifest is not valid JSON" in text


def test_a_session_page_shows_findings_with_the_culprit_span(setup):
    client, _ = setup
    status, text = route(client, "/session/train")
    assert status == 200
    assert '"findings"' in text and "log_loss" in text and "train.py:57" in text and "recompilation" in text


def test_a_pod_session_names_its_straggler_and_why(setup, tmp_path):
    from tests.support.synthetic import training_capture, write_session

    logdir = str(tmp_path / "pods")
    write_session(logdir, "pod", {"host-a_9012": training_capture(steps=20, devices=2, seed=1),
                                  "host-b_9012": training_capture(steps=20, devices=2, recompile_every=1, seed=2)})
    client = create_app(logdir).server.test_client()
    status, text = route(client, "/session/pod")
    assert status == 200 and "workers-chart" in text
    assert "host-b:9012" in text and "is a straggler" in text and "compile" in text


def test_a_session_without_compiles_says_so_instead_of_an_empty_table(setup):
    client, _ = setup
    status, text = route(client, "/session/warm")
    assert status == 200 and "compiles-table-empty" in text and "No compilation during this capture" in text
    assert '"id": "compiles-table"' not in text
    status, text = route(client, "/session/train")
    assert '"id": "compiles-table"' in text and "compiles-table-empty" not in text


def test_an_fsspec_url_logdir_is_browsed(tmp_path):
    write_demo_logdir(tmp_path / "logdir", steps=10)
    client = create_app(f"file://{tmp_path / 'logdir'}").server.test_client()
    status, text = route(client, "/")
    assert status == 200 and "/session/train" in text
    status, text = route(client, "/session/train")
    assert status == 200 and "log_loss" in text and "session-error" not in text


def test_a_broken_session_shows_one_error_and_the_rest_keeps_working(setup):
    client, _ = setup
    status, text = route(client, "/session/broken")
    assert status == 200 and "session-error" in text and "localhost_9012.xplane.pb" in text
    assert "Traceback" not in text
    assert '"findings"' in route(client, "/session/multi")[1]


@pytest.mark.parametrize("pathname", [
    "/session/..", "/session/../../secret.txt", "/session/%2e%2e%2f%2e%2e%2fsecret.txt", "/session/%252e%252e",
    "/session//etc/passwd", "/session/" + "/tmp", "/session/train/../../../secret.txt", "/../secret.txt",
    "/session/\x00", "/nowhere", 12, None, ["/session/train"],
])
def test_hostile_paths_get_a_clear_not_found(setup, pathname):
    client, _ = setup
    status, text = route(client, pathname)
    assert status == 200
    assert SECRET not in text and "root:" not in text
    if pathname not in (12, None, ["/session/train"]):  # those fall back to the sessions page
        assert "not-found" in text


@pytest.mark.parametrize("url", [
    "/session/..%2f..%2fsecret.txt", "/assets/..%2f..%2f..%2fsecret.txt", "/assets/%2e%2e/%2e%2e/secret.txt",
    "/_dash-component-suites/dash/..%2f..%2f..%2f..%2fsecret.txt", "/_dash-layout?x=%00",
    "/_dash-component-suites/../../../etc/passwd", "/session/%00",
])
def test_raw_http_requests_never_serve_a_file_outside(setup, url):
    client, _ = setup
    response = client.get(url)
    body = response.get_data(as_text=True)
    assert SECRET not in body and "root:x:" not in body
    assert response.status_code in (200, 404, 400, 308)


@pytest.mark.parametrize("search", ["?from_ms=abc&to_ms=%ff", "?from_ms=1e999&to_ms=-1e999", "?from_ms=5&to_ms=1",
                                    "?" + "a=1&" * 200, 42, {"x": 1}])
def test_malformed_query_parameters_still_draw_the_page(setup, search):
    client, _ = setup
    status, text = route(client, "/session/train", search)
    assert status == 200 and '"findings"' in text


def test_a_query_range_opens_the_timeline_there(setup):
    client, _ = setup
    status, text = route(client, "/session/train", "?from_ms=10&to_ms=12")
    assert status == 200 and "10.000 – 12.000 ms" in text


ZOOM = GAP_CLICK = ""  # set by the fixture
GAPS = "..gaps-table.getRowsResponse...gaps-info.children.."


def zoom(client, relayout, run="train", reset=None, frame=None):
    return call(client, ZOOM, [("timeline", "relayoutData", relayout), ("timeline-reset", "n_clicks", reset)],
                state=[("session-run", "data", run), ("flame-selection", "children", frame),
                       ("timeline-workers", "children", None)],
                changed="timeline-reset.n_clicks" if reset else None)


def click_gap(client, cell, run="train", frame=None):
    return call(client, GAP_CLICK, [("gaps-table", "cellClicked", cell)],
                state=[("session-run", "data", run), ("flame-selection", "children", frame),
                       ("timeline-workers", "children", None)])


def figure_range(text: str) -> list[float]:
    response = json.loads(text)["response"]
    return response["timeline"]["figure"]["layout"]["xaxis"]["range"]


@pytest.mark.parametrize("relayout,cell", [
    ("junk", None), ({"xaxis.range": "x"}, "x"), ({"xaxis.range[0]": None}, {"rowId": "x"}),
    ([1, 2, 3], 5), ({"xaxis.range": [1, 2, 3]}, {"rowId": 10**20}), ({"autosize": True}, {"rowId": "-1"}),
    ({"xaxis.range": []}, {"rowId": [7]}),
])
def test_timeline_callbacks_ignore_malformed_input(setup, relayout, cell):
    client, _ = setup
    # Nothing to redraw: the callbacks answer "no update" (204), neither an error nor a new figure.
    assert zoom(client, relayout)[0] == 204
    assert click_gap(client, cell)[0] == 204


def test_zoom_redraws_the_range_and_a_gap_click_frames_the_gap(setup):
    client, state = setup
    status, text = zoom(client, {"xaxis.range[0]": 2, "xaxis.range[1]": 3})
    assert status == 200 and figure_range(text) == pytest.approx([2, 3])
    status, text = zoom(client, None, reset=1)
    assert status == 200 and figure_range(text)[1] > 3
    gaps = state.gaps("train")
    # What AG Grid sends for a click on the row of gap 7 (row ids are strings).
    status, text = click_gap(client, {"value": "compile", "colId": "cause", "rowIndex": 0, "rowId": "7",
                                      "timestamp": 1})
    lo, hi = figure_range(text)
    assert lo * 1000 < gaps.start_us[7] and hi * 1000 > gaps.start_us[7] + gaps.dur_us[7]


def test_callbacks_for_an_unknown_session_say_so(setup):
    client, _ = setup
    for status, text in (zoom(client, {"xaxis.autorange": True}, run="../../secret.txt"),
                         click_gap(client, {"rowId": "1"}, run="%2e%2e"),
                         call(client, GAPS, [("gaps-table", "getRowsRequest", {"startRow": 0, "endRow": 15})],
                              state=[("session-run", "data", "../secret.txt")])):
        assert status == 200 and "no longer available" in text and SECRET not in text


def gaps_request(client, request, run="train"):
    status, text = call(client, GAPS, [("gaps-table", "getRowsRequest", request)],
                        state=[("session-run", "data", run)])
    return status, (json.loads(text)["response"] if status == 200 else text)


@pytest.mark.parametrize("request_,rows,ignored", [
    # the request as AG Grid's infinite row model sends it; how many rows come back; whether a filter is ignored
    ({"startRow": 0, "endRow": 15, "sortModel": [{"colId": "dur_ms", "sort": "desc"}],
      "filterModel": {"cause": {"filterType": "text", "type": "contains", "filter": "compile"}}}, "compiles", False),
    ({"startRow": 15, "endRow": 30, "sortModel": [], "filterModel": {}}, 15, False),  # the second page
    ({"startRow": "x", "endRow": "y", "sortModel": "junk", "filterModel": {"not": "a filter"}}, 100, True),
    ({"startRow": -4, "endRow": 10**9, "sortModel": [None, 3],
      "filterModel": {"dur_ms": {"filterType": "number", "type": "greaterThan", "filter": "abc"}}}, 500, True),
    ("junk", 100, False), (None, 100, False),
])
def test_gaps_callback_pages_and_survives_malformed_input(setup, request_, rows, ignored):
    client, state = setup
    status, response = gaps_request(client, request_)
    assert status == 200
    block, info = response["gaps-table"]["getRowsResponse"], response["gaps-info"]["children"]
    data, total = block["rowData"], len(state.gaps("train"))
    if rows == "compiles":
        durations = [r["dur_ms"] for r in data]
        assert data and all(r["cause"] == "compile" for r in data) and durations == sorted(durations, reverse=True)
        assert block["rowCount"] == len(data) < total  # the filter kept the compiles only
    else:
        assert len(data) == min(rows, total) and block["rowCount"] == total and info.startswith(f"{total:,} gaps")
    assert ("ignored the filter" in info) == ignored


def test_the_gaps_pages_follow_each_other(setup):
    client, _ = setup
    pages = [gaps_request(client, {"startRow": k, "endRow": k + 15, "sortModel": [{"colId": "start_ms", "sort": "asc"}],
                           "filterModel": {}})[1]["gaps-table"]["getRowsResponse"]["rowData"] for k in (0, 15)]
    first, second = ([r["id"] for r in page] for page in pages)
    assert len(first) == len(second) == 15 and not set(first) & set(second)
    assert pages[0][-1]["start_ms"] <= pages[1][0]["start_ms"]


def test_new_sessions_appear_without_a_restart(setup, tmp_path):
    client, state = setup
    from tests.support.synthetic import training_capture, write_session

    write_session(state.logdir, "later", {"localhost_9012": training_capture(steps=2, devices=1)})
    try:
        status, text = call(client, "sessions-listing.children", [("sessions-refresh", "n_intervals", 1)])
        assert status == 200 and "/session/later" in text
    finally:
        import shutil

        shutil.rmtree(os.path.join(state.logdir, "plugins", "profile", "later"))


def test_requests_are_served_from_the_cache(setup):
    client, state = setup
    route(client, "/session/train")
    loads = state.cache.loads
    for _ in range(5):
        route(client, "/session/train")
        route(client, "/")
    assert state.cache.loads == loads


@pytest.mark.parametrize("host,warned", [("127.0.0.1", False), ("localhost", False), ("::1", False),
                                         ("0.0.0.0", True), ("192.168.1.5", True), ("myhost.example", True)])
def test_serve_binds_where_told_and_warns_off_loopback(monkeypatch, capsys, tmp_path, host, warned):
    ran = {}

    class Served:  # what serve() makes and runs: the real server would bind addresses this machine lacks
        def __init__(self, host, port, app, **kw) -> None:
            ran.update(host=host, port=port, app=app, **kw)

        def serve_forever(self) -> None:  # returns at once: serve() then returns as after a stop
            ran["served"] = True

        def shutdown(self) -> None:
            ran["shut"] = True

        def server_close(self) -> None:
            pass

    monkeypatch.setattr("werkzeug.serving.make_server", Served)
    # These addresses need not exist on this machine; binding is tested with a real busy port in
    # test_capture_cli.test_a_busy_dashboard_port_is_one_line_and_exit_2_before_any_work.
    monkeypatch.setattr(server, "check_port", lambda host, port: None)
    server.serve(str(tmp_path), host=host, port=8123)
    out, err = capsys.readouterr()
    assert ran["host"] == host and ran["port"] == 8123 and ran["threaded"] is True and ran["served"] and ran["shut"]
    assert ran["app"].name == "dashboard.app" and not ran.get("use_debugger") and not ran.get("use_reloader")
    assert out.count(":8123/") == 1
    assert ("warning" in err) is warned


def test_serve_defaults_to_loopback():
    import inspect

    assert inspect.signature(server.serve).parameters["host"].default == "127.0.0.1"


def _layout(client, referrer: str | None) -> dict:
    response = client.get("/_dash-layout", headers={"Referer": referrer} if referrer else {})
    assert response.status_code == 200
    return json.loads(response.get_data(as_text=True))


def _find(node: object, component_id: str) -> dict | None:
    """The component of id ``component_id`` in a layout's JSON (depth first)."""
    if isinstance(node, list):
        return next((found for child in node if (found := _find(child, component_id))), None)
    if not isinstance(node, dict):
        return None
    props = node.get("props", {})
    return node if props.get("id") == component_id else _find(props.get("children"), component_id)


def test_the_layout_carries_the_page_of_the_url_it_is_asked_for(setup):
    client, _ = setup
    layout = _layout(client, "http://127.0.0.1:8050/session/train?from_ms=10&to_ms=12")
    # The page is drawn with the layout (no callback after load), and the location holds its own URL,
    # so that it mounts without a change that would draw the page a second time.
    props = _find(layout, "url")["props"]
    assert (props["pathname"], props["search"]) == ("/session/train", "?from_ms=10&to_ms=12")
    assert _find(layout, "session-page") is not None
    assert "10.000 – 12.000 ms" in json.dumps(_find(layout, "timeline-status"), ensure_ascii=False)
    assert _find(_layout(client, "http://127.0.0.1:8050/session/no-such-run"), "not-found") is not None
    assert _find(_layout(client, "http://127.0.0.1:8050/"), "sessions-table") is not None


def test_a_layout_request_without_a_referrer_leaves_the_page_to_the_router(setup):
    client, _ = setup
    layout = _layout(client, None)
    assert _find(layout, "page")["props"].get("children") is None
    assert "pathname" not in _find(layout, "url")["props"]  # it mounts, sets its pathname, and the router draws


def test_the_plotly_bundle_has_every_trace_the_dashboard_draws():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "dashboard"
    used = {name.lower() for path in root.rglob("*.py") for name in re.findall(r"\bgo\.([A-Z]\w+)\(", path.read_text())}
    used.discard("figure")
    bundled = set(re.findall(r'moduleType:"trace",name:"(\w+)"', (root / "assets" / "plotly-xlaprof.min.js").read_text()))
    assert used and used <= bundled, f"traces drawn but not in the bundle (see dashboard/plotly_bundle): {used - bundled}"
