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
from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.synthetic import StepProgram, training_capture, write_before_after, write_session

SIZES = ((1024, 768), (1280, 900))
BOX = "(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"
MS = re.compile(r"^-?\d{1,3}(,\d{3})*\.\d$")  # 2,567.1


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    logdir = root / "logdir"
    write_demo_logdir(logdir, steps=20)
    ops = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
    programs = [StepProgram(100 + b, f"{b:032x}", mlp_module(100 + b, b), ops) for b in (8, 12, 16)]
    write_session(str(logdir), "longnames", {"localhost_9012": training_capture(  # a file name as long as real ones
        steps=6, devices=2, sampled=True, programs=programs * 2, script="/work/project/train_mlp_growing_batch.py")})
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


# Per grid cell: its column, text and whether the text fits; per header: whether a word broke over lines.
CELLS = """return [...document.querySelectorAll('.xgrid .ag-cell')].map(c => [c.closest('.xgrid').id,
    c.getAttribute('col-id'), c.textContent, [c, ...c.querySelectorAll('.ag-cell-value')].every(
      e => e.scrollWidth <= e.clientWidth + 1)])"""
BROKEN_HEADERS = """return [...document.querySelectorAll('.xgrid .ag-header-cell-text')].filter(h => {
    const r = document.createRange(); r.selectNodeContents(h);
    const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top))).size;
    return lines > h.textContent.trim().split(/\\s+/).length || h.scrollWidth > h.clientWidth + 1;
  }).map(h => h.textContent)"""


def test_tables_fit_1024_px_without_cut_words(site, browser):
    """Every grid of the session page at 1024 px: no cell cut (columns as wide as their content,
    wrapping between words) and no header broken inside a word ("Duratio/n")."""
    browser.set_window_size(*SIZES[0])
    browser.get(site.url + "/session/longnames")
    wait_for(browser, "document.querySelector('#compiles-table .ag-cell') && document.querySelector('#ops-table .ag-cell') "
                      "&& document.querySelector("
                      "'#gaps-table .ag-row .ag-cell[col-id=dur_ms]')?.textContent")
    cells = browser.execute_script(CELLS)
    assert {grid for grid, *_ in cells} >= {"gaps-table", "compiles-table", "graphs-table", "ops-table"}
    assert [c for c in cells if c[1] == "source" and c[2] == "train_mlp_growing_batch.py:30"]
    assert not [c for c in cells if not c[3]], [c for c in cells if not c[3]]
    assert browser.execute_script(BROKEN_HEADERS) == []


def test_span_lanes_are_labelled_where_a_name_fits_and_no_label_overflows(site, browser):
    """The timeline's span bars carry their span's name where it fits (hover no longer needed), the
    flame graph draws no frame name wider than its box."""
    browser.set_window_size(*SIZES[0])
    browser.get(site.url + "/session/sampled")
    wait_for(browser, "document.querySelector('#timeline .js-plotly-plot .bars') && "
                      "document.querySelector('#flame .slice')")
    labels = browser.execute_script(
        "return [...document.querySelectorAll('#timeline .bars .point')].filter(p => p.querySelector('text'))"
        ".map(p => { const t = p.querySelector('text').getBBox(), b = p.querySelector('path').getBBox();"
        " return [p.querySelector('text').textContent, t.width <= b.width + 1]; })")
    assert {name for name, _ in labels} & {"train_step", "log_loss", "forward"}, labels
    assert all(fits for _, fits in labels), labels
    frames = browser.execute_script(
        "return [...document.querySelectorAll('#flame .slice')].map(s => { const t = s.querySelector('text');"
        " const w = t ? t.getBBox().width : 0; return [t ? t.textContent : '', w, s.querySelector('path').getBBox().width]; })")
    assert frames and all(w <= box + 1 for _, w, box in frames), frames


def test_the_trend_s_step_axis_has_round_ticks(site, browser):
    """The median-step axis of the sessions' trend ticks at round numbers (0, 0.5, 1, ...), not at
    the idle-share axis' grid lines carried over (0.519, 1.037, ...)."""
    browser.set_window_size(*SIZES[0])
    browser.get(site.url + "/")
    ticks = wait_for(browser, "[...document.querySelectorAll('#trend-chart .y2tick text')].map(t => t.textContent)"
                              ".filter(t => t).length > 2 && [...document.querySelectorAll('#trend-chart .y2tick text')]"
                              ".map(t => t.textContent)")
    assert all(re.fullmatch(r"\d+(\.\d)?", t) for t in ticks), ticks
