"""Any name a run directory can have opens its page (spaces, Unicode, punctuation, a literal
``%``), through the link the sessions page gives it and through its plain name; a run whose real
path leaves the logdir is neither listed (nor read for its figures) nor opened."""
from __future__ import annotations

import json
import urllib.parse

import pytest

from dashboard.app import create_app
from dashboard.components import session_href
from dashboard.state import AppState
from tests.support.dash_requests import callback_body
from tests.support.run_names import LINKED_OUT, odd_names_logdir

NAMES = ["run with space", "ünï", "semi;colon", "50%", "a%20b", "quote'd \"x\"", "tab\there", "emoji-🙂"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    logdir = odd_names_logdir(tmp_path_factory.mktemp("names"), NAMES)
    state = AppState(logdir)
    return create_app(logdir, state).server.test_client(), state


def route(client, pathname: str) -> str:
    body = callback_body("page.children", [("url", "pathname", pathname), ("url", "search", "")], (), None)
    response = client.post("/_dash-update-component", json=body)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def _title(text: str) -> str | None:
    """The children of the element ``session-title`` in a callback's JSON answer."""
    def find(node):
        if isinstance(node, dict):
            props = node.get("props", {})
            if isinstance(props, dict) and props.get("id") == "session-title":
                return props.get("children")
            return next((found for v in node.values() if (found := find(v)) is not None), None)
        if isinstance(node, list):
            return next((found for v in node if (found := find(v)) is not None), None)
        return None

    return find(json.loads(text))


@pytest.mark.parametrize("name", NAMES)
def test_every_valid_directory_name_opens_from_its_link_and_its_name(setup, name):
    client, state = setup
    # Its link, and its plain name where that is a URL of it too (a literal "%20" in a name must be encoded)
    for pathname in (session_href(name),) + (("/session/" + name,) if "%2" not in name else ()):
        text = route(client, pathname)
        assert "session-page" in text or "session-title" in text, (pathname, text[:300])
        assert "Session not found" not in text and "not-found" not in text
        assert _title(text) == name  # titled by its name, not its encoding
    assert state.entry(urllib.parse.quote(name, safe="")).run_dir.endswith(name)


def test_a_run_leading_outside_is_not_listed_read_or_opened(setup, caplog):
    client, state = setup
    fresh = AppState(state.logdir)  # nothing cached: the listing reads what it lists
    with caplog.at_level("INFO", logger="xlaprof"):
        listed = [row.session.run for row in fresh.listing()]
    assert sorted(listed) == sorted(NAMES)
    reads = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reading session")]
    assert len(reads) == len(NAMES) and not any(LINKED_OUT in m or "elsewhere" in m for m in reads)
    text = route(client, f"/session/{LINKED_OUT}")
    assert "not-found" in text and "session-title" not in text
