"""The real ``xlaprof dashboard`` answers malformed callback requests with 400 and oversized bodies
with 413, one line each, and its log holds no traceback; a well-formed callback still works."""
from __future__ import annotations

import http.client
import itertools
import json
from collections.abc import Iterable

import pytest

from tests.support.dashboard_harness import DashboardServer, write_demo_logdir

ROUTE = {"output": "page.children", "outputs": {"id": "page", "property": "children"},
         "inputs": [{"id": "url", "property": "pathname", "value": "/session/train"},
                    {"id": "url", "property": "search", "value": ""}], "changedPropIds": ["url.pathname"]}
ZOOM = "..timeline.figure...timeline-status.children.."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logdir")
    write_demo_logdir(logdir, steps=8)
    with DashboardServer(logdir) as running:
        yield running


def _send(server, header: tuple[str, str], pieces: Iterable[bytes], timeout: float) -> tuple[int, str]:
    """POST ``pieces`` to the callback URL with the one body ``header`` given (its length or its
    encoding); the status and text of the answer, which may come before the body is all sent."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        conn.putrequest("POST", "/_dash-update-component")
        conn.putheader("Content-Type", "application/json")
        conn.putheader(*header)
        conn.endheaders()
        try:
            for piece in pieces:
                conn.send(piece)
        except (BrokenPipeError, ConnectionResetError):  # the server answered before reading it all
            pass
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def _post(server, body: bytes, length: int | None = None) -> tuple[int, str]:
    """POST ``body`` with a Content-Length of ``length`` (default: its own)."""
    return _send(server, ("Content-Length", str(len(body) if length is None else length)), [body], timeout=30)


MALFORMED = {
    "empty list": b"[]", "null": b"null", "a number": b"3", "a string": b'"x"', "not JSON": b"{output:",
    "empty object": b"{}", "100k-deep JSON": b"[" * 100_000 + b"]" * 100_000,
    "deep object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "unknown output": json.dumps({**ROUTE, "output": "nothing.children"}).encode(),
    "output not a string": json.dumps({**ROUTE, "output": ["page.children"]}).encode(),
    "inputs missing": json.dumps({k: v for k, v in ROUTE.items() if k != "inputs"}).encode(),
    "inputs not a list": json.dumps({**ROUTE, "inputs": {"id": "url"}}).encode(),
    "too few inputs": json.dumps({**ROUTE, "inputs": ROUTE["inputs"][:1]}).encode(),
    "wrong input ids": json.dumps({**ROUTE, "inputs": [{"id": "x", "property": "y"}] * 2}).encode(),
    "inputs of null": json.dumps({**ROUTE, "inputs": [None, None]}).encode(),
    "outputs of a multi-output callback not a list": json.dumps({**ROUTE, "output": ZOOM, "outputs": {}}).encode(),
    "changedPropIds not a list": json.dumps({**ROUTE, "changedPropIds": 3}).encode(),
}


def test_malformed_callbacks_get_400_and_no_traceback(server):
    for name, body in MALFORMED.items():
        status, text = _post(server, body)
        assert status == 400 and text.startswith("bad callback request: ") and text.count("\n") == 1, (name, text)
    status, text = _post(server, json.dumps(ROUTE).encode())  # a well-formed one still draws the page
    assert status == 200 and "session-page" in text
    assert "Traceback" not in server.output()


def test_a_body_over_the_limit_gets_413_without_being_read(server):
    status, text = _post(server, b"[" * 65536, length=50 * 2**20)  # says 50 MB, sends 64 kB
    assert status == 413 and text == "request body too large: the limit is 4 MB\n"
    status, _ = _post(server, b" " * (5 * 2**20))  # and one really sent
    assert status == 413
    assert _post(server, json.dumps(ROUTE).encode())[0] == 200  # the server is still serving
    assert "Traceback" not in server.output()


def _post_chunked(server, chunks: Iterable[bytes]) -> tuple[int, str]:
    """POST with ``Transfer-Encoding: chunked`` (no Content-Length), as a streaming client sends."""
    framed = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return _send(server, ("Transfer-Encoding", "chunked"), itertools.chain(framed, [b"0\r\n\r\n"]), timeout=60)


def test_a_chunked_body_over_the_limit_gets_413_too(server):
    status, text = _post_chunked(server, (b"[" * 2**20 for _ in range(50)))  # 50 MB, no Content-Length
    assert status == 413 and text == "request body too large: the limit is 4 MB\n"
    body = json.dumps(ROUTE).encode()
    status, text = _post_chunked(server, [body[:10], body[10:]])  # a well-formed chunked one is answered
    assert status == 200 and "session-page" in text
    assert "Traceback" not in server.output()
