"""The pod section of the real dashboard in headless Chromium, on a synthetic pod whose straggler is
built in: five TPU-shaped workers of 12 steps on 2 chips; ``tpu-vm-3`` recompiles every step (5 ms
each), so it is the slowest worker of steps 1-11 (every worker compiles at step 0). Screenshots go
to ``test-artifacts/``."""
from __future__ import annotations

import json

import pytest

from tests.support.dashboard_harness import (
    DashboardServer,
    screenshot,
    severe_console_errors,
    wait_for,
)
from tests.support.synthetic import training_capture, write_session

STEPS, WORKERS, SLOW = 12, 5, "tpu-vm-3:8466"
HEATMAP = "document.querySelector('#pod-heatmap .js-plotly-plot')"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("pod-browser") / "logdir"
    write_session(str(logdir), "pod", {
        f"tpu-vm-{i}_8466": training_capture(steps=STEPS, devices=2, seed=i, recompile_every=1 if i == 3 else 0)
        for i in range(WORKERS)})
    with DashboardServer(logdir) as server:
        yield server


def click_cell(driver, worker: str, step: int) -> None:
    """A click at the centre of the heatmap's cell (worker, step), where Plotly's axes put it."""
    from selenium.webdriver import ActionChains

    plot = driver.find_element("css selector", "#pod-heatmap .js-plotly-plot")
    dx, dy = driver.execute_script(
        f"const gd = {HEATMAP}, xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;"
        "const box = gd.getBoundingClientRect();"
        f"return [xa._offset + xa.l2p({step}) - box.width / 2, ya._offset + ya.d2p({json.dumps(worker)}) - box.height / 2];")
    ActionChains(driver).move_to_element_with_offset(plot, int(dx), int(dy)).click().perform()


def test_the_heatmap_draws_every_worker_and_step_and_names_the_straggler(site, browser):
    browser.get(site.url + "/session/pod")
    wait_for(browser, f"{HEATMAP} && document.querySelector('#pod-heatmap .hm image')")
    rows, cols = browser.execute_script(f"const z = {HEATMAP}.data[0].z; return [z.length, z[0].length]")
    assert (rows, cols) == (WORKERS, STEPS)
    marks = browser.execute_script(f"const m = {HEATMAP}.data[1]; return [[...m.x], [...m.y]]")
    # step 0, where every worker compiles alike, has no straggler (within 1% of its median worker)
    assert marks == [list(range(1, STEPS)), [SLOW] * (STEPS - 1)]
    slowest = browser.find_element("css selector", "#pod-slowest").text
    assert slowest.startswith(f"Slowest worker of each step: {SLOW} in 11")
    groups = [r.text for r in browser.find_elements("css selector", "#pod-groups .pod-group")]
    assert groups[0].startswith("slow, mostly compile") and SLOW in groups[0]
    assert "tpu-vm-{0-2,4}:8466" in groups[1]
    status = browser.find_element("css selector", "#timeline-status").text
    assert f"lanes of {SLOW}, tpu-vm-0:8466 only (2 of 5 workers)" in status
    screenshot(browser, "pod-heatmap")

    click_cell(browser, "tpu-vm-1:8466", 5)
    wait_for(browser, "document.querySelector('#pod-cell .pod-cell-title')")
    assert browser.find_element("css selector", "#pod-cell .pod-cell-title").text.startswith("tpu-vm-1:8466, step 5:")
    wait_for(browser, "document.getElementById('timeline-status').textContent.includes('lanes of tpu-vm-1:8466 only')")
    lanes = browser.execute_script("return [...new Set([...document.querySelector('#timeline .js-plotly-plot').data]"
                                   ".flatMap(t => [...(t.y || [])]))]")
    assert lanes and all(lane.startswith("tpu-vm-1:8466") for lane in lanes)

    browser.find_element("css selector", "#pod-cause input[value='compile']").click()
    wait_for(browser, f"{HEATMAP}.data[0].hovertemplate.includes('compile idle')")
    z = browser.execute_script(f"return {HEATMAP}.data[0].z")
    row = browser.execute_script(f"return [...{HEATMAP}.data[0].y].indexOf({json.dumps(SLOW)})")
    assert min(z[row][1:]) > 50 and max(max(r[1:]) for i, r in enumerate(z) if i != row) == 0
    screenshot(browser, "pod-cell-clicked")
    assert severe_console_errors(browser) == []
