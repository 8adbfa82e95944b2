"""Hostile dashboard requests, generated: URLs built from traversal pieces, percent-encodings,
Unicode and control characters; callback bodies mutated from real ones (a field dropped, given
any JSON value, nested deep, made huge); raw bodies of any bytes and content type. Against the app
in-process on a logdir with a run linked outside it and a secret beside it, the only answers are
2xx, 3xx, 400, 404, 405 or 413 (never a 500), no answer carries a byte read outside the logdir,
and no request is logged with a traceback."""
from __future__ import annotations

import io
import json
import logging
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.app import create_app
from dashboard.request_guard import MAX_BODY_BYTES
from dashboard.state import AppState
from tests.support.dash_requests import callback_body
from tests.support.synthetic import training_capture, write_session

SECRET = "TOP-SECRET-5e0b77"
ALLOWED = {200, 204, 301, 302, 308, 400, 404, 405, 413}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    logdir = root / "logdir"
    write_session(str(logdir), "train", {"localhost_9012": training_capture(steps=6, devices=1)})
    write_session(str(logdir), "odd name; ünï", {"localhost_9012": training_capture(steps=4, devices=1, seed=1)})
    outside = root / "outside"
    write_session(str(outside), "elsewhere", {"localhost_9012": training_capture(steps=3, devices=1)})
    (outside / "plugins" / "profile" / "elsewhere" / f"{SECRET}.txt").write_text(SECRET)
    (root / "secret.txt").write_text(SECRET)
    os.symlink(outside / "plugins" / "profile" / "elsewhere", logdir / "plugins" / "profile" / "linked_out")
    dash_app = create_app(str(logdir), AppState(str(logdir)))
    dash_app.server.testing = False  # as served: an exception becomes a 500 here, not a re-raise
    return dash_app


@pytest.fixture
def client(app, caplog):
    caplog.set_level(logging.INFO)
    yield app.server.test_client()
    assert not [r for r in caplog.records if r.exc_info], "a request was logged with a traceback"


def _check(response) -> str:
    body = response.get_data(as_text=True)
    assert response.status_code in ALLOWED, (response.status_code, body[:300])
    assert SECRET not in body and "root:x:" not in body
    return body


PIECES = st.sampled_from(["..", ".", "%2e%2e", "%252e%252e", "%2f", "%5c", "%00", "\x00", "/", "//", "\\", "~",
                          "secret.txt", "etc", "passwd", "train", "linked_out", "elsewhere", "odd name; ünï",
                          "odd%20name%3B%20%C3%BCn%C3%AF", "session", "assets", "_dash-layout",
                          "_dash-component-suites", "compare", "?before=..&after=linked_out", "%ff", "ü", " ", ";"])
# A path, never "//host": the test client would take that for another server's URL. Tabs and line
# breaks are dropped first, as the client's URL parser drops them ("/\n/.." is "//..", a host).
_DROPPED_BY_URLSPLIT = str.maketrans("", "", "\t\r\n")
PATHS = st.lists(PIECES | st.text(max_size=12), min_size=1, max_size=8).map(
    lambda parts: "/" + "/".join(parts).translate(_DROPPED_BY_URLSPLIT).lstrip("/"))


@FUZZ
@given(path=PATHS)
def test_any_url_is_answered_and_leaks_nothing(client, path):
    _check(client.get(path))


@FUZZ
@given(pathname=PATHS | st.text(max_size=40), search=st.text(max_size=40) | st.none() | st.integers())
def test_any_page_url_draws_a_page_or_not_found(client, pathname, search):
    body = callback_body("page.children", [("url", "pathname", pathname), ("url", "search", search)])
    text = _check(client.post("/_dash-update-component", json=body))
    assert "session-title" not in text or "train" in str(pathname) or "odd" in str(pathname)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=10)


DEEP = "__deep__"  # stands for JSON nested deeper than a parser goes, spliced into the body's text


@st.composite
def mutated_callbacks(draw, app) -> bytes:
    """A real callback's body with one to three of its fields replaced, dropped or blown up."""
    output, spec = draw(st.sampled_from(sorted(app.callback_map.items())))
    body = callback_body(output, [(i["id"], i["property"], draw(JSON)) for i in spec["inputs"]],
                         [(s["id"], s["property"], draw(JSON)) for s in spec.get("state", [])])
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(body) + ["extra"]))
        how = draw(st.sampled_from(["drop", "any", "deep", "huge", "value"]))
        if how == "drop":
            body.pop(key, None)
        elif how == "any":
            body[key] = draw(JSON)
        elif how == "deep":
            body[key] = DEEP
        elif how == "huge":
            body[key] = "x" * draw(st.integers(10_000, 200_000))
        elif isinstance(body.get("inputs"), list) and body["inputs"] and isinstance(body["inputs"][0], dict):
            # a well-formed request whose value is anything
            body["inputs"][0]["value"] = draw(JSON | st.sampled_from(["../../secret.txt", "linked_out", "/etc/passwd"]))
    depth = draw(st.integers(50, 100_000))
    return json.dumps(body).replace(f'"{DEEP}"', "[" * depth + "1" + "]" * depth).encode()


@FUZZ
@given(data=st.data())
def test_mutated_callback_bodies_get_an_answer_never_a_500(app, client, data):
    _check(client.post("/_dash-update-component", data=data.draw(mutated_callbacks(app)),
                       content_type="application/json"))


@FUZZ
@given(body=st.binary(max_size=4096) | st.sampled_from([b"[" * 100_000, b'{"output":' * 50_000, b"\xff\xfe", b""]),
       content_type=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded",
                                     "multipart/form-data; boundary=x", ""]),
       path=st.sampled_from(["/_dash-update-component", "/", "/session/train", "/_dash-layout", "/compare"]))
def test_raw_bodies_of_any_bytes_are_refused_cleanly(client, body, content_type, path):
    _check(client.post(path, data=body, content_type=content_type))


def test_the_body_limit_holds_with_and_without_a_length(client):
    big = b" " * (MAX_BODY_BYTES + 1)
    response = client.post("/_dash-update-component", data=big, content_type="application/json")
    assert response.status_code == 413 and _check(response).startswith("request body too large")
    chunked = client.post("/_dash-update-component", input_stream=io.BytesIO(big), content_type="application/json",
                          environ_overrides={"wsgi.input_terminated": True})  # no Content-Length: a chunked body
    assert chunked.status_code == 413 and _check(chunked).startswith("request body too large")


@pytest.mark.parametrize("item", [{}, {"id": "timeline"}, {"property": "figure"}, {"id": 3, "property": "figure"},
                                  {"id": "timeline", "property": None}])
def test_outputs_without_an_id_and_property_get_400(app, client, item):
    """Found by the fuzz above: Dash itself fails (a KeyError, a 500) on such an output."""
    output, spec = next((k, v) for k, v in sorted(app.callback_map.items()) if k.startswith(".."))
    body = callback_body(output, [(i["id"], i["property"], None) for i in spec["inputs"]],
                         [(s["id"], s["property"], None) for s in spec.get("state", [])])
    body["outputs"] = [item] * len(body["outputs"])
    response = client.post("/_dash-update-component", json=body)
    assert response.status_code == 400 and _check(response).startswith("bad callback request: outputs")
