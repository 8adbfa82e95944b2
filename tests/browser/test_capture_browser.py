"""Capture from the dashboard (issue 30): the sessions page's form captures a real torch_xla worker
(the session's demo worker, on the CPU device) through the server, shows its progress and opens the
new session; a host the address rule refuses is one line, and nothing is captured."""
from __future__ import annotations

import os

from tests.support.dashboard_harness import DashboardServer, screenshot, severe_console_errors, wait_for


def fill(driver, field: str, value: str) -> None:
    """Type ``value`` over a field's text, as a person does (a React input ignores WebElement.clear)."""
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element("id", field)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)
    box.send_keys(value)


def test_the_form_captures_a_live_worker_and_opens_its_session(live_worker, browser, tmp_path):
    logdir = tmp_path / "logdir"
    with DashboardServer(logdir, tmp_path) as server:
        browser.set_window_size(1024, 768)
        browser.get(server.url + "/")
        wait_for(browser, "document.querySelector('#capture-section summary')")
        browser.find_element("css selector", "#capture-section summary").click()

        # Refused: another host, without --allow-remote-capture. One line, nothing started.
        fill(browser, "capture-hosts", "10.1.2.3")
        browser.find_element("id", "capture-start").click()
        refused = wait_for(browser, "document.querySelector('#capture-status .capture-error')?.textContent")
        assert "only workers on this machine" in refused and "--allow-remote-capture" in refused
        assert not os.path.exists(logdir / "plugins")

        fill(browser, "capture-hosts", f"localhost:{live_worker.port}")
        fill(browser, "capture-duration", "2")
        fill(browser, "capture-name", "from-the-form")
        browser.find_element("id", "capture-start").click()
        # The refused attempt's error stays until the new status replaces it: wait for the progress, or
        # for an error other than that one.
        started = wait_for(browser, "document.querySelector('#capture-progress') ? 'progress' : "
                                    "[...document.querySelectorAll('#capture-status .capture-error')]"
                                    ".map(e => e.textContent).find(t => !t.includes('only workers on this machine'))")
        assert started == "progress", started
        wait_for(browser, "location.pathname === '/session/from-the-form'", timeout=120)
        verdict = wait_for(browser, "document.querySelector('#verdict')?.textContent", timeout=120)
        assert verdict.startswith("The devices were idle ")
        assert os.path.isdir(logdir / "plugins" / "profile" / "from-the-form")
        screenshot(browser, "capture-form-session")
        assert severe_console_errors(browser) == []
