"""The compare page and the sessions trend in the real dashboard, in headless Chromium: from the
sessions page's trend and link, to two sessions side by side, and another pick redrawn."""
from __future__ import annotations

import os

import pytest

from tests.support.dashboard_harness import (
    DashboardServer,
    browser_available,
    screenshot,
    severe_console_errors,
    wait_for,
)
from tests.support.synthetic import training_capture, write_before_after, write_session

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not browser_available(), reason="needs /usr/bin/chromium and /usr/bin/chromedriver")]
wait = wait_for


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare_browser")
    logdir = str(root / "logdir")
    runs = list(write_before_after(logdir))
    runs.append(write_session(logdir, "later", {"localhost_9013": training_capture(steps=60, devices=2, read_every=3)}))
    for n, run in enumerate(runs):  # captured an hour apart, in this order
        for name in os.listdir(run):
            os.utime(os.path.join(run, name), (1_700_000_000 + 3600 * n,) * 2)
    with DashboardServer(logdir, root) as server:
        yield server


def traces(driver, graph: str) -> list[dict]:
    """Each drawn trace's name, type and number of points (or of samples, for a histogram)."""
    return driver.execute_script(f"return document.querySelector('#{graph} .js-plotly-plot')._fullData"
                                 ".map(t => ({name: t.name, type: t.type, n: t._length}))")


def text(driver, element_id: str) -> str:
    return driver.execute_script(f"return document.getElementById('{element_id}').textContent")


def test_from_the_trend_to_two_sessions_side_by_side(site, browser):
    browser.get(site.url + "/")
    wait(browser, "document.querySelector('#trend-chart .js-plotly-plot .scatterlayer .trace')")
    assert traces(browser, "trend-chart") == [{"name": "device idle share (%)", "type": "scatter", "n": 3},
                                              {"name": "median step (ms)", "type": "scatter", "n": 3}]
    screenshot(browser, "sessions-trend")

    browser.find_element("id", "compare-link").click()
    wait(browser, "document.getElementById('compare-verdict')")
    # by default the two newest: after, then later (a read every third step)
    assert "a new read at log_loss (train.py:57) costs" in text(browser, "compare-verdict")

    browser.get(site.url + "/compare?before=before&after=after")
    wait(browser, "document.querySelector('#compare-steps .js-plotly-plot .barlayer .trace') && "
                  "document.querySelector('#compare-findings .ag-row')")
    verdict = text(browser, "compare-verdict")
    assert verdict.startswith("step time -") and verdict.endswith("the read at log_loss (train.py:57) is gone")
    assert [(t["name"], t["type"]) for t in traces(browser, "compare-causes")] == [("before", "bar"), ("after", "bar")]
    assert [(t["name"], t["type"], t["n"]) for t in traces(browser, "compare-steps")] == [
        ("before (60 steps)", "histogram", 60), ("after (60 steps)", "histogram", 60)]
    first_row = browser.find_element("css selector", "#compare-findings .ag-center-cols-container .ag-row").text
    assert first_row.split("\n")[:4] == ["resolved", "transfer_from_device", "log_loss", "train.py:57"]
    screenshot(browser, "compare")

    # another pick redraws the body: the dropdown opens its options, a click picks one
    browser.find_element("id", "compare-after").click()
    option = "[...document.querySelectorAll('[role=option]')].find(o => o.textContent.trim() === 'later')"
    wait(browser, option)
    browser.execute_script(f"{option}.click()")
    wait(browser, "document.getElementById('compare-verdict') && "
                  "!document.getElementById('compare-verdict').textContent.endsWith('is gone')")
    assert "the read at log_loss (train.py:57) went from" in text(browser, "compare-verdict")
    assert severe_console_errors(browser) == []
