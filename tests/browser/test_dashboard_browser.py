"""The real dashboard (``python -m xlaprof dashboard``) driven by headless Debian Chromium.

Screenshots go to ``test-artifacts/`` for a person to look at. Waits are waits for something to
appear, never assertions on time.
"""
from __future__ import annotations

import http.client
import json
import os

import pytest

from tests.support.dashboard_harness import (
    DashboardServer,
    browser_available,
    chromium,
    screenshot,
    severe_console_errors,
    write_demo_logdir,
)

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not browser_available(), reason="needs /usr/bin/chromium and /usr/bin/chromedriver")]

SECRET = "TOP-SECRET-51b0c3"
WAIT_S = 60


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    logdir = root / "logdir"
    write_demo_logdir(logdir)
    (root / "secret.txt").write_text(SECRET)
    os.symlink(root, logdir / "plugins" / "profile" / "escape")  # a run that leads out of the logdir
    with DashboardServer(logdir, root) as server:
        yield server


@pytest.fixture
def browser(tmp_path):
    driver = chromium(tmp_path / "profile")
    yield driver
    driver.quit()


def wait(driver, script: str, timeout: float = WAIT_S):
    """Wait until the JavaScript expression ``script`` is truthy; return its value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(f"return {script}"))


def text_of(driver, css: str) -> str:
    return driver.find_element("css selector", css).text


def x_range(driver) -> list[float]:
    return driver.execute_script("return document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range")


def open_session(driver, url: str) -> None:
    driver.get(url)
    wait(driver, "document.querySelector('#timeline .js-plotly-plot .bars') && "
                 "document.querySelector('#gaps-table td')")


def test_sessions_page_lists_sessions_and_links_to_them(site, browser):
    browser.get(site.url + "/")
    wait(browser, "document.querySelectorAll('#sessions-table .session-link').length >= 3")
    table = text_of(browser, "#sessions-table")
    for run in ("train", "multi", "broken", "badmanifest"):
        assert run in table
    assert "%" in table and "ms" in table  # idle share and duration of the readable ones
    errors = [e.text for e in browser.find_elements("css selector", "#sessions-table .row-error")]
    assert any("not a readable XSpace" in e for e in errors)
    assert any("manifest is not valid JSON" in e for e in errors)
    screenshot(browser, "sessions")
    browser.find_element("link text", "train").click()
    wait(browser, "document.querySelector('#findings .finding')")
    assert browser.current_url.endswith("/session/train")
    assert severe_console_errors(browser) == []


def test_session_page_shows_findings_and_the_culprit_span(site, browser):
    open_session(browser, site.url + "/session/train")
    findings = browser.find_elements("css selector", "#findings .finding")
    assert findings
    spans = [f.find_element("css selector", ".finding-span").text for f in findings]
    assert "log_loss" in spans
    read = findings[spans.index("log_loss")]
    assert "train.py:57" in read.text and "transfer from device" in read.text
    assert "recompilation" in text_of(browser, "#findings")
    for card in (".card-device", ".card-idle", ".card-compiles", ".card-reads", ".card-fallbacks"):
        assert browser.find_element("css selector", card).is_displayed()
    assert "log_loss" in text_of(browser, ".card-reads")
    screenshot(browser, "session-train")
    assert severe_console_errors(browser) == []


def test_dragging_on_the_timeline_zooms_and_fetches_detail(site, browser):
    from selenium.webdriver import ActionChains

    open_session(browser, site.url + "/session/train")
    before, status_before = x_range(browser), text_of(browser, "#timeline-status")
    plot = browser.find_element("css selector", "#timeline .nsewdrag")
    width = plot.size["width"]
    ActionChains(browser).move_to_element_with_offset(plot, -width // 2 + 40, 0).click_and_hold() \
        .move_by_offset(width // 8, 0).release().perform()
    wait(browser, f"document.getElementById('timeline-status').textContent !== {json.dumps(status_before)}")
    after = x_range(browser)
    assert before[0] <= after[0] < after[1] <= before[1]
    assert after[1] - after[0] < (before[1] - before[0]) / 4
    assert "aggregated" not in text_of(browser, "#timeline-status")  # zoomed in: single events
    screenshot(browser, "timeline-zoomed")
    assert severe_console_errors(browser) == []


def test_clicking_a_gap_row_zooms_the_timeline_to_it(site, browser):
    open_session(browser, site.url + "/session/train")
    before = x_range(browser)
    cell = browser.find_element("css selector", "#gaps-table td[data-dash-column='start_ms']")
    start_ms = float(cell.text)
    cell.click()
    wait(browser, f"(r => r[1] - r[0] < {(before[1] - before[0]) / 2})"
                  f"(document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range)")
    lo, hi = x_range(browser)
    assert lo < start_ms < hi
    screenshot(browser, "timeline-gap")
    assert severe_console_errors(browser) == []


def test_sorting_and_filtering_the_gaps_table(site, browser):
    from selenium.webdriver.common.keys import Keys

    open_session(browser, site.url + "/session/train")
    box = browser.find_element("css selector", "#gaps-table th[data-dash-column='cause'] input")
    box.send_keys("transfer_from_device", Keys.ENTER)
    cells = "[...document.querySelectorAll(\"#gaps-table td[data-dash-column='cause']\")]"
    # Rows remain, and all of them are reads (every() alone would hold for an emptied table).
    wait(browser, f"{cells}.length > 0 && {cells}.every(td => td.textContent === 'transfer_from_device')")
    assert "log_loss" in text_of(browser, "#gaps-table")
    assert severe_console_errors(browser) == []


def test_multi_worker_session_compares_workers(site, browser):
    open_session(browser, site.url + "/session/multi")
    assert browser.find_element("css selector", "#workers-chart .main-svg").is_displayed()
    labels = browser.execute_script(
        "return document.querySelector('#timeline .js-plotly-plot').layout.yaxis.categoryarray")
    assert any(label.startswith("host-a:9012") for label in labels) and any(l.startswith("host-b") for l in labels)
    screenshot(browser, "session-multi")
    assert severe_console_errors(browser) == []


def test_a_broken_session_shows_one_error_and_the_app_keeps_working(site, browser):
    browser.get(site.url + "/session/broken")
    wait(browser, "document.getElementById('session-error')")
    assert len(browser.find_elements("css selector", ".message")) == 1
    assert "localhost_9012.xplane.pb" in text_of(browser, "#session-error")
    screenshot(browser, "session-broken")
    open_session(browser, site.url + "/session/multi")
    assert severe_console_errors(browser) == []


@pytest.mark.parametrize("path,shows", [
    ("/session/..", "sessions-table"),  # the browser resolves ".." itself: the sessions page
    ("/session/%2e%2e%2f%2e%2e%2fsecret.txt", "not-found"), ("/session/%252e%252e%252fsecret.txt", "not-found"),
    ("/session//etc/passwd", "not-found"), ("/session/escape", "not-found"), ("/session/..%2Fsecret.txt", "not-found"),
    ("/session/train?from_ms=abc&to_ms=%ff%00", "findings"),  # malformed query: the page draws as usual
])
def test_hostile_urls_get_a_clear_not_found(site, browser, path, shows):
    browser.get(site.url + path)
    wait(browser, f"document.getElementById('{shows}')")
    if shows == "not-found":
        assert "not found" in text_of(browser, "#not-found").lower()
    assert SECRET not in browser.page_source and "root:x:" not in browser.page_source
    if path == "/session/%2e%2e%2f%2e%2e%2fsecret.txt":
        screenshot(browser, "hostile-not-found")
    assert severe_console_errors(browser) == []


@pytest.mark.parametrize("raw", ["/session/../../secret.txt", "/assets/../../secret.txt",
                                 "/_dash-component-suites/dash/../../../../secret.txt", "/%2e%2e/%2e%2e/secret.txt"])
def test_raw_requests_never_return_file_contents(site, raw):
    # http.client sends the path as written: no client-side normalisation of "..".
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=30)
    conn.request("GET", raw)
    response = conn.getresponse()
    body = response.read().decode(errors="replace")
    conn.close()
    assert SECRET not in body and response.status < 500


def test_garbage_callback_requests_do_not_take_the_server_down(site, browser):
    for body in (b"not json", b"{}", b'{"output": "page.children", "inputs": 5}', b"\xff" * 100):
        conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=30)
        conn.request("POST", "/_dash-update-component", body=body, headers={"Content-Type": "application/json"})
        conn.getresponse().read()
        conn.close()
    open_session(browser, site.url + "/session/train")


def test_a_new_capture_appears_without_a_restart(site, browser):
    from tests.support.synthetic import training_capture, write_session

    browser.get(site.url + "/")
    wait(browser, "document.getElementById('sessions-table')")
    write_session(site.logdir, "arrived_later", {"localhost_9012": training_capture(steps=3, devices=1)})
    wait(browser, "document.getElementById('sessions-table').textContent.includes('arrived_later')")
    assert severe_console_errors(browser) == []


def test_a_real_torch_xla_capture(request, browser, tmp_path):
    try:
        logdir = request.getfixturevalue("real_logdir")
    except pytest.FixtureLookupError:
        pytest.skip("the real_logdir fixture (tests/conftest.py) is not available")
    with DashboardServer(logdir, tmp_path) as server:
        browser.get(server.url + "/")
        wait(browser, "document.querySelector('#sessions-table .session-link')")
        browser.find_element("css selector", "#sessions-table .session-link").click()
        wait(browser, "document.querySelector('#timeline .js-plotly-plot .bars')")
        spans = [e.text for e in browser.find_elements("css selector", "#findings .finding-span")]
        assert "log_loss" in spans
        assert any(s in spans for s in ("make_batch", "train_step"))
        assert "recompil" in text_of(browser, "#findings")
        screenshot(browser, "session-real")
        assert severe_console_errors(browser) == []
