"""The idle flame graph and the gaps' Python stacks in the real dashboard, in headless Chromium.

The session is ``training_capture(sampled=True)``: per step ``train.py:30 train_step`` (under
``train.py:100 <module>``) holding ``:42 forward`` and the read in ``:57 log_loss`` (above torch's
``_tensor.py:1020 item``); ``plain`` is the same run without the sampler. Screenshots go to
``test-artifacts/``.
"""
from __future__ import annotations

import json

import pytest

from dashboard.views.flame import idle_flame
from tests.support.dashboard_harness import (
    DEMO_SCRIPT,
    DashboardServer,
    screenshot,
    severe_console_errors,
    wait_for,
)
from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.session import Session

STEPS, DEVICES = 30, 2
GAP_ROWS = "[...document.querySelectorAll('#gaps-table .ag-center-cols-container .ag-row')]"
ROWS_LOADED = (f"{GAP_ROWS}.length > 0 && {GAP_ROWS}.every(r => !r.classList.contains('ag-row-loading') && "
               f"r.querySelector(\"[col-id='dur_ms']\").textContent !== '')")
# Per idle cause drawn on a device lane (a trace per category; busy bars and host lanes left out).
IDLE_ON_DEVICES = ("[...document.querySelector('#timeline .js-plotly-plot').data].filter(t => t.name !== "
                   "'device busy' && [...t.y].some(y => y.includes('TPU'))).map(t => t.name).sort()")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("stacks-browser") / "logdir"
    run = write_session(str(logdir), "sampled", {"localhost_9012": training_capture(
        steps=STEPS, devices=DEVICES, read_every=1, recompile_every=10, script=DEMO_SCRIPT, sampled=True)})
    plain = write_session(str(logdir), "plain", {"localhost_9012": training_capture(
        steps=STEPS, devices=DEVICES, read_every=1, recompile_every=10, script=DEMO_SCRIPT)})
    flame = idle_flame(analyze(Session.load(run)))
    with DashboardServer(logdir) as server:
        yield server, {node.label: node.pieces for node in flame.nodes}, analyze(Session.load(plain)).gap_count


def gap_column(driver, col: str) -> list[str]:
    return driver.execute_script(f"return {GAP_ROWS}.map(r => r.querySelector(\"[col-id='{col}']\").textContent)")


def click_slice(driver, label: str) -> None:
    from selenium.webdriver import ActionChains

    # The icicle redraws its boxes as it zooms: wait for the one box with that label, then click it.
    box = wait_for(driver, f"(b => b.length === 1 && b[0])([...document.querySelectorAll('#flame .slice')]"
                           f".filter(s => s.textContent.trim() === {json.dumps(label)}))")
    ActionChains(driver).move_to_element(box).click().perform()


def status_is(driver, text: str) -> None:
    wait_for(driver, f"document.getElementById('flame-status').textContent === {json.dumps(text)}")


def test_a_flame_frame_filters_the_gaps_and_a_gap_shows_its_stack(site, browser):
    server, pieces, plain_gaps = site
    browser.get(server.url + "/session/sampled")
    wait_for(browser, f"document.querySelectorAll('#flame .slice').length >= 5 && {ROWS_LOADED}")
    every = browser.find_element("css selector", "#gaps-info").text
    assert every == f"{sum(n for label, n in pieces.items() if label == 'all idle time with a Python line'):,} gaps"
    assert len(browser.execute_script(f"return {IDLE_ON_DEVICES}")) >= 3  # compile, reads, tracing...

    click_slice(browser, "train.py:57 log_loss")
    reads = pieces["train.py:57 log_loss"]
    assert reads == STEPS * DEVICES
    wait_for(browser, f"document.getElementById('gaps-info').textContent === '{reads} gaps' && {ROWS_LOADED} && "
                      f"{GAP_ROWS}.every(r => r.querySelector(\"[col-id='source']\").textContent === 'train.py:57')")
    assert set(gap_column(browser, "cause")) == {"transfer_from_device"}
    assert browser.find_element("css selector", "#flame-status").text == \
        "Showing only the gaps under train.py:57 log_loss."
    wait_for(browser, "document.getElementById('timeline-status').textContent.includes('log_loss only')")
    assert browser.execute_script(f"return {IDLE_ON_DEVICES}") == ["transfer_from_device"]
    screenshot(browser, "stacks-frame-selected")

    browser.find_element("css selector", "#gaps-table .ag-row[row-index='0'] .ag-cell[col-id='dur_ms']").click()
    wait_for(browser, "document.querySelector('#stack-panel .frame-source')")
    frames = [f.text for f in browser.find_elements("css selector", "#stack-panel .frame")]
    assert frames == ["train.py:100 <module>", "train.py:30 train_step", "train.py:57 log_loss",
                      "_tensor.py:1020 item"]
    assert browser.find_element("css selector", "#stack-panel .frame-source").text == "train.py:57 log_loss"
    framework = browser.find_element("css selector", "#stack-panel .frame-framework")
    assert framework.text == "_tensor.py:1020 item"
    assert framework.value_of_css_property("font-weight") == "400"  # the user's frames are the bold ones
    assert "transfer_from_device" in browser.find_element("css selector", "#stack-panel .stack-title").text
    screenshot(browser, "stacks-gap-clicked")

    browser.find_element("css selector", "#flame-clear").click()
    wait_for(browser, f"document.getElementById('gaps-info').textContent === {json.dumps(every)} && {ROWS_LOADED}")
    wait_for(browser, "!document.getElementById('timeline-status').textContent.includes('only')")
    assert len(browser.execute_script(f"return {IDLE_ON_DEVICES}")) >= 3
    assert severe_console_errors(browser) == []


def test_a_finding_shows_its_stack_when_expanded(site, browser):
    server, _, _ = site
    browser.get(server.url + "/session/sampled")
    wait_for(browser, "document.querySelector('#findings .finding-stack')")
    stack = browser.find_element("css selector", "#findings .finding-stack")
    assert not stack.find_element("css selector", ".stack-frames").is_displayed()  # collapsed at first
    stack.find_element("css selector", "summary").click()
    wait_for(browser, "document.querySelector('#findings .finding-stack[open]')")
    frames = [f.text for f in stack.find_elements("css selector", ".frame")]
    assert frames[0] == "train.py:100 <module>" and frames[-1] in ("train.py:57 log_loss", "train.py:30 train_step")
    assert severe_console_errors(browser) == []


def test_zooming_out_selects_the_parent_and_another_session_starts_unfiltered(site, browser):
    server, pieces, plain_gaps = site
    browser.get(server.url + "/session/sampled")
    wait_for(browser, f"document.querySelectorAll('#flame .slice').length >= 5 && {ROWS_LOADED}")
    every = browser.find_element("css selector", "#gaps-info").text
    click_slice(browser, "train.py:57 log_loss")
    status_is(browser, "Showing only the gaps under train.py:57 log_loss.")
    # Zoomed in, the icicle's top bar is the selected frame: a click on it zooms out to its caller.
    click_slice(browser, "train.py:57 log_loss")
    status_is(browser, "Showing only the gaps under train.py:30 train_step.")
    wait_for(browser, f"document.getElementById('gaps-info').textContent === "
                      f"'{pieces['train.py:30 train_step']:,} gaps'")
    click_slice(browser, "train.py:57 log_loss")
    status_is(browser, "Showing only the gaps under train.py:57 log_loss.")
    # In-app navigation to a session without stacks: its gaps are not filtered by the other's frame.
    browser.find_element("css selector", ".brand").click()
    wait_for(browser, "document.querySelectorAll('#sessions-table .session-link').length === 2")
    browser.find_element("link text", "plain").click()
    wait_for(browser, f"document.getElementById('flame-empty') && {ROWS_LOADED}")
    assert "no Python stacks in the capture of localhost:9012" in browser.find_element("css selector",
                                                                                       "#flame-empty").text
    assert browser.find_element("css selector", "#gaps-info").text == f"{plain_gaps:,} gaps"  # all of them
    assert "only" not in browser.find_element("css selector", "#timeline-status").text
    screenshot(browser, "stacks-none")
    browser.back()
    browser.back()
    wait_for(browser, f"document.querySelectorAll('#flame .slice').length >= 5 && {ROWS_LOADED}")
    status_is(browser, "Click a frame to see only its gaps.")
    assert browser.find_element("css selector", "#gaps-info").text == every
    assert severe_console_errors(browser) == []
