"""Runs named as a person names directories (a space, Unicode, punctuation) open in the real
dashboard, in headless Chromium: a click on each link of the sessions page, and the URL typed
again (a reload), draw that session's page; a run linked outside the logdir is not listed."""
from __future__ import annotations

import urllib.parse

import pytest

from tests.support.dashboard_harness import (
    DashboardServer,
    severe_console_errors,
    wait_for,
)
from tests.support.run_names import odd_names_logdir

NAMES = ["run with space", "ünï", "semi;colon", "50% off"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("names_browser")
    with DashboardServer(odd_names_logdir(root, NAMES), root) as server:
        yield server


LINKS = "[...document.querySelectorAll('a.session-link')].map(a => a.textContent)"


@pytest.mark.parametrize("name", NAMES)
def test_each_odd_name_opens_from_its_link_and_its_url(site, browser, name):
    browser.get(site.url + "/")
    listed = wait_for(browser, f"{LINKS}.length && {LINKS}")
    assert sorted(listed) == sorted(NAMES)  # linked_out is not listed
    link = f"[...document.querySelectorAll('a.session-link')].find(a => a.textContent === {name!r})"
    browser.execute_script(f"{link}.click()")
    wait_for(browser, "document.getElementById('session-title') || document.getElementById('not-found')")
    assert browser.execute_script("return !document.getElementById('not-found')"), browser.page_source[:500]
    assert urllib.parse.unquote(browser.current_url.rsplit("/", 1)[1]) == name
    assert browser.execute_script("return document.getElementById('session-title').textContent") == name
    browser.get(browser.current_url)  # the same URL typed again: the first page comes in the layout
    wait_for(browser, "document.getElementById('session-title') || document.getElementById('not-found')")
    assert browser.execute_script("return !document.getElementById('not-found')")
    assert severe_console_errors(browser) == []
