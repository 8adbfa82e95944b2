"""The real dashboard (``python -m xlaprof dashboard``) driven by headless Debian Chromium.

Screenshots go to ``test-artifacts/`` for a person to look at. Waits are waits for something to
appear, never assertions on time.
"""
from __future__ import annotations

import http.client
import json
import os
import re

import pytest

from tests.support.dashboard_harness import (
    DEMO_SCRIPT,
    DashboardServer,
    screenshot,
    severe_console_errors,
    wait_for,
    write_demo_logdir,
)

SECRET = "TOP-SECRET-51b0c3"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    logdir = root / "logdir"
    write_demo_logdir(logdir)
    (root / "secret.txt").write_text(SECRET)
    os.symlink(root, logdir / "plugins" / "profile" / "escape")  # a run that leads out of the logdir
    with DashboardServer(logdir, root) as server:
        yield server


wait = wait_for


def text_of(driver, css: str) -> str:
    return driver.find_element("css selector", css).text


def x_range(driver) -> list[float]:
    return driver.execute_script("return document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range")


GAP_ROWS = "[...document.querySelectorAll('#gaps-table .ag-center-cols-container .ag-row')]"
# The grid shows empty loading rows while the server answers: a page is there when none is left.
GAP_PAGE_LOADED = (f"{GAP_ROWS}.length > 0 && {GAP_ROWS}.every(r => !r.classList.contains('ag-row-loading') && "
                   f"r.querySelector(\"[col-id='dur_ms']\").textContent !== '')")


def open_session(driver, url: str) -> None:
    driver.get(url)
    wait(driver, f"document.querySelector('#timeline .js-plotly-plot .bars') && {GAP_PAGE_LOADED}")


def column(driver, col: str) -> list[str]:
    """The text of column ``col`` on the gaps grid's current page, top to bottom."""
    return driver.execute_script(
        f"return {GAP_ROWS}.sort((a, b) => a.getAttribute('row-index') - b.getAttribute('row-index'))"
        f".map(r => r.querySelector(\"[col-id='{col}']\").textContent)")


def values(driver, col: str) -> list[float]:
    """The numbers behind column ``col`` on the gaps grid's current page (cells show them rounded)."""
    return driver.execute_script(
        f"const ids = new Set({GAP_ROWS}.map(r => r.getAttribute('row-id'))); const out = [];"
        f"dash_ag_grid.getApi('gaps-table').forEachNode(n => {{ if (n.data && ids.has(n.id)) out.push(n.data.{col}); }});"
        "return out;")


def paging(driver) -> str:
    return text_of(driver, "#gaps-table .ag-paging-panel").replace("\n", " ")


def wait_for_page(driver, previous: str) -> str:
    """Wait until the grid's paging panel says something else than ``previous`` and its rows arrived;
    where they do not, say which of the two did not happen."""
    from selenium.common.exceptions import TimeoutException
    try:
        wait(driver, f"(p => p && p.innerText.replace(/\\n/g, ' ') !== {json.dumps(previous)})"
                     f"(document.querySelector('#gaps-table .ag-paging-panel')) && {GAP_PAGE_LOADED}")
    except TimeoutException:
        loaded = driver.execute_script(f"return {GAP_PAGE_LOADED}")
        raise AssertionError(f"the gaps grid's page: {paging(driver)!r} (before: {previous!r}), its rows "
                             f"{'loaded' if loaded else 'not loaded'}") from None
    return paging(driver)


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
    assert "train.py:57" in read.text and "transfer_from_device" in read.text
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
    cell = browser.find_element("css selector", "#gaps-table .ag-row[row-index='0'] .ag-cell[col-id='start_ms']")
    start_ms = browser.execute_script("return dash_ag_grid.getApi('gaps-table').getDisplayedRowAtIndex(0).data.start_ms")
    assert cell.text == f"{start_ms:,.1f}"
    cell.click()
    wait(browser, f"(r => r[1] - r[0] < {(before[1] - before[0]) / 2})"
                  f"(document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range)")
    lo, hi = x_range(browser)
    assert lo < start_ms < hi
    screenshot(browser, "timeline-gap")
    assert severe_console_errors(browser) == []


def smallest_gap_start_ms(logdir: str) -> float:
    """What the first row sorted by start must show: the earliest gap of the train session."""
    from dashboard.views.axis import AXIS_UNIT_US
    from dashboard.views.gap_table import gap_columns
    from xlaprof.analysis import analyze
    from xlaprof.session import Session

    gaps = gap_columns(analyze(Session.load(os.path.join(logdir, "plugins", "profile", "train"))))
    return float(gaps.start_us.min()) / AXIS_UNIT_US


def test_sorting_and_paging_the_gaps_grid(site, browser):
    open_session(browser, site.url + "/session/train")
    total = int(text_of(browser, "#gaps-info").split()[0].replace(",", ""))
    first = paging(browser)
    assert f"1 to 15 of {total:,}" in first and "Page 1 of" in first
    # The longest gaps first (the default sort), continued on the next page.
    page1 = [float(v.replace(",", "")) for v in column(browser, "dur_ms")]
    assert len(page1) == 15 and page1 == sorted(page1, reverse=True)
    browser.find_element("css selector", "#gaps-table .ag-paging-button[aria-label='Next Page']").click()
    second = wait_for_page(browser, first)
    assert f"16 to 30 of {total:,}" in second and "Page 2 of" in second
    page2 = [float(v.replace(",", "")) for v in column(browser, "dur_ms")]
    assert len(page2) == 15 and page2 == sorted(page2, reverse=True) and page2[0] <= page1[-1]
    browser.find_element("css selector", "#gaps-table .ag-paging-button[aria-label='Last Page']").click()
    last = wait_for_page(browser, second)
    pages = -(-total // 15)
    assert f"Page {pages} of {pages}" in last and len(column(browser, "dur_ms")) == total - 15 * (pages - 1)
    # A click on a header sorts the whole session on the server, not only the page shown.
    browser.find_element("css selector", "#gaps-table .ag-header-cell[col-id='start_ms'] .ag-header-cell-label").click()
    sorted_page = wait_for_page(browser, last)
    assert "Page 1 of" in sorted_page
    starts = [float(v.replace(",", "")) for v in column(browser, "start_ms")]
    assert starts == sorted(starts) and len(starts) == 15
    assert starts[0] == pytest.approx(smallest_gap_start_ms(site.logdir), abs=0.05)  # shown with one decimal
    screenshot(browser, "gaps-sorted")
    assert severe_console_errors(browser) == []


def test_filtering_the_gaps_grid(site, browser):
    open_session(browser, site.url + "/session/train")
    total = int(text_of(browser, "#gaps-info").split()[0].replace(",", ""))
    before = paging(browser)
    box = browser.find_element("css selector", "#gaps-table .ag-floating-filter[col-id='cause'] input")
    box.send_keys("transfer_from")
    filtered = wait_for_page(browser, before)
    # Rows remain, and all of them are reads (every() alone would hold for an emptied grid).
    causes = column(browser, "cause")
    assert causes and all(c == "transfer_from_device" for c in causes)
    matching = int(text_of(browser, "#gaps-info").split()[0].replace(",", ""))
    assert 0 < matching < total and f"of {matching:,}" in filtered
    assert set(column(browser, "span")) == {"log_loss"}
    # A second filter narrows further: reads of at least the typed duration.
    durations = sorted(values(browser, "dur_ms"))
    threshold = durations[len(durations) // 2]
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*\.\d", v) for v in column(browser, "dur_ms"))  # shown as 2,567.1
    browser.find_element("css selector", "#gaps-table .ag-floating-filter[col-id='dur_ms'] input").send_keys(
        str(threshold))
    narrowed = wait_for_page(browser, filtered)
    kept = values(browser, "dur_ms")
    assert kept and all(d >= threshold for d in kept) and set(column(browser, "cause")) == {"transfer_from_device"}
    assert 0 < int(text_of(browser, "#gaps-info").split()[0].replace(",", "")) < matching, narrowed
    # A filter nothing matches says so, instead of an empty grid.
    box.send_keys("zzz")
    wait(browser, "document.querySelector('#gaps-table').innerText.includes('No gap matches these filters')")
    assert text_of(browser, "#gaps-info").startswith("0 gaps")
    assert severe_console_errors(browser) == []


def test_a_source_shows_file_and_line_and_its_full_path_on_hover(site, browser):
    from selenium.webdriver import ActionChains

    open_session(browser, site.url + "/session/train")
    cell = browser.find_element("css selector", "#gaps-table .ag-row[row-index='0'] .ag-cell[col-id='source']")
    assert cell.text == "train.py:30"  # the longest gap is a compile in train_step
    ActionChains(browser).move_to_element(cell).perform()
    tip = wait(browser, "(t => t && t.textContent)(document.querySelector('.ag-tooltip'))")
    assert tip == f"{DEMO_SCRIPT}:30"
    assert severe_console_errors(browser) == []


def test_the_compiles_table_fits_and_a_session_without_compiles_says_so(site, browser):
    browser.set_window_size(1024, 900)
    open_session(browser, site.url + "/session/train")
    wait(browser, "document.querySelector('#compiles-table .ag-row')")
    fits = browser.execute_script(
        "const v = document.querySelector('#compiles-table .ag-center-cols-viewport');"
        "return [v.scrollWidth, v.clientWidth]")
    assert fits[0] <= fits[1] + 1, fits  # no horizontal scrolling
    triggers = browser.execute_script(
        "return [...document.querySelectorAll(\"#compiles-table .ag-row .ag-cell[col-id='source']\")]"
        ".map(c => c.textContent)")
    assert triggers and set(triggers) == {"train.py:30"}
    browser.get(site.url + "/session/warm")
    wait(browser, "document.getElementById('compiles-table-empty')")
    assert "No compilation during this capture" in text_of(browser, "#compiles-section")
    assert not browser.find_elements("css selector", "#compiles-table")
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
        # What ranks first depends on how fast this machine compiles; what must show is a real
        # capture's findings: the demo's compiles, named by the worker's own lines (its stacks).
        findings = text_of(browser, "#findings")
        assert "compil" in findings and "demo_worker.py:" in findings
        screenshot(browser, "session-real")
        assert severe_console_errors(browser) == []
