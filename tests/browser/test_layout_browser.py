"""The dashboard's layout in headless Chromium at 1024x768 and 1280x900: the timeline keeps most of
the width, no modebar covers a figure's key, grid cells show whole words and formatted numbers, and
AG Grid has nothing to warn about."""
from __future__ import annotations

import re

import pytest

from tests.support.dashboard_harness import (
    DashboardServer,
    screenshot,
    wait_for,
    write_demo_logdir,
)
from tests.support.synthetic import write_before_after

SIZES = ((1024, 768), (1280, 900))
BOX = "(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"
MS = re.compile(r"^-?\d{1,3}(,\d{3})*\.\d$")  # 2,567.1


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    logdir = root / "logdir"
    write_demo_logdir(logdir, steps=20)
    before, after = (p.rsplit("/", 1)[-1] for p in write_before_after(str(logdir)))
    with DashboardServer(logdir, root) as server:
        server.pair = f"?before={before}&after={after}"
        yield server


def boxes(driver, css: str) -> list[list[float]]:
    return driver.execute_script(f"return [...document.querySelectorAll({css!r})].map({BOX})")


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def assert_no_modebar_over_a_key(driver) -> None:
    modebars, keys = boxes(driver, ".js-plotly-plot .modebar"), boxes(driver, ".legend")
    assert modebars and keys
    assert not [(m, k) for m in modebars for k in keys if overlap(m, k)]
    assert boxes(driver, ".js-plotly-plot g.legend") == []  # no Plotly legend is drawn anywhere


@pytest.mark.parametrize("width,height", SIZES)
def test_session_page_layout(site, browser, width, height):
    browser.set_window_size(width, height)
    browser.get(site.url + "/session/sampled")
    wait_for(browser, "document.querySelector('#timeline .js-plotly-plot .bars') && "
                      "document.querySelector('#gaps-table .ag-row .ag-cell[col-id=dur_ms]')?.textContent")
    wait_for(browser, "document.querySelector('#steps-chart .trace')")
    section = boxes(browser, "#timeline-section")[0]
    plot, panel = boxes(browser, "#timeline .main-svg")[0], boxes(browser, "#stack-panel")[0]
    inner = section[2] - section[0] - 34  # the section's padding and border
    assert plot[2] - plot[0] >= (0.95 * inner if width < 1100 else 0.65 * inner)
    if width < 1100:  # the stack panel goes under the timeline
        assert panel[1] >= plot[3] - 1
    else:  # beside it
        assert panel[0] >= plot[2] - 1 and panel[1] < plot[3]
    assert_no_modebar_over_a_key(browser)
    # Grid cells: whole words (a worker is never cut), times as 2,567.1
    cells = browser.execute_script(
        "return [...document.querySelectorAll('#gaps-table .ag-row .ag-cell')].map(c => "
        "[c.getAttribute('col-id'), c.textContent, c.scrollWidth <= c.clientWidth + 1])")
    workers = [c for c in cells if c[0] == "worker"]
    assert workers and all(fits for _, _, fits in workers), workers
    assert all(MS.match(text) for col, text, _ in cells if col in ("start_ms", "dur_ms")), cells
    logs = [e["message"] for e in browser.get_log("browser")]
    assert not [m for m in logs if "getRowId" in m or "AG Grid" in m and "warn" in m.lower()], logs
    screenshot(browser, f"session-layout-{width}")


def test_compare_page_keys_are_clear_of_the_modebar_at_1024(site, browser):
    browser.set_window_size(*SIZES[0])
    browser.get(site.url + "/compare" + site.pair)
    wait_for(browser, "document.querySelector('#compare-steps .js-plotly-plot .bars') && "
                      "document.querySelector('#compare-causes .js-plotly-plot .bars')")
    assert_no_modebar_over_a_key(browser)
    keys = browser.execute_script("return [...document.querySelectorAll('#compare-body .legend-item')]"
                                  ".map(e => e.textContent)")
    assert [k for k in keys if k.startswith("after (")] and "before" in keys
    screenshot(browser, "compare-layout-1024")


def test_the_answer_is_above_the_fold_at_1024x768(site, browser):
    """The verdict, the idle-by-cause bar and the top three findings are all on the first screen."""
    browser.set_window_size(*SIZES[0])
    browser.get(site.url + "/session/sampled")
    wait_for(browser, "document.querySelector('#top-findings .compact-finding')")
    fold = browser.execute_script("return window.innerHeight")
    parts = {name: boxes(browser, css) for name, css in (("verdict", "#verdict"), ("bar", "#idle-summary .idle-bar"),
                                                         ("rows", "#top-findings .compact-finding"))}
    assert len(parts["rows"]) == 3 and parts["verdict"] and parts["bar"]
    assert all(box[3] <= fold for boxes_ in parts.values() for box in boxes_), (fold, parts)
    verdict = browser.find_element("css selector", "#verdict").text
    assert "transfer_from_device" in verdict and "log_loss (train.py:57)" in verdict and "Fix: " in verdict
    # Compact rows stay on one line each, and no row is cut at the right edge of the page.
    assert all(box[3] - box[1] < 40 and box[2] <= browser.execute_script("return innerWidth") for box in parts["rows"])
    # Each advice is written once; a finding with the same advice points to the first one.
    advice = browser.execute_script("return [...document.querySelectorAll('#findings .finding-advice')]"
                                    ".map(e => [e.textContent, e.classList.contains('advice-ref')])")
    written = [text for text, ref in advice if not ref]
    assert any(ref for _, ref in advice) and len(written) == len(set(written)) and all(t.startswith("Fix: same as #") for t, ref in advice if ref)
