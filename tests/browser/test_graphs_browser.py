"""The compiled graphs in the real dashboard, in headless Chromium: why a step recompiled, what
changed at a clicked compile, a graph's ops on a click, and an op's HLO text on a click.

The session: a TPU-shaped capture whose step cycles through five batch sizes (five programs of
tests/support/hlo_builder.py, each compiled once and run twice on two chips)."""
from __future__ import annotations

import pytest

from tests.support.dashboard_harness import (
    DashboardServer,
    screenshot,
    severe_console_errors,
    wait_for,
)
from tests.support.hlo_builder import MLP_OPS, mlp_module
from tests.support.synthetic import StepProgram, TrainingShape, training_capture, write_session

BATCHES = (8, 12, 16, 20, 24)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("graphs_browser")
    ops = tuple((name, category, share) for name, (category, share) in MLP_OPS.items())
    programs = {b: StepProgram(100 + b, f"{b:032x}", mlp_module(100 + b, b), ops) for b in BATCHES}
    write_session(str(root / "logdir"), "hlo", {"localhost_9012": training_capture(
        steps=10, devices=2, programs=[programs[b] for b in BATCHES * 2], shape=TrainingShape(jitter_us=0))})
    with DashboardServer(root / "logdir", root) as server:
        yield server


wait = wait_for


def cell(driver, grid: str, column: str, text: str):
    """The cell of ``column`` in the row of ``grid`` whose cell there reads ``text``."""
    wait(driver, f"[...document.querySelectorAll(\"#{grid} .ag-cell[col-id='{column}']\")]"
                 f".some(c => c.textContent === {text!r})")
    return next(c for c in driver.find_elements("css selector", f"#{grid} .ag-cell[col-id='{column}']")
                if c.text == text)


def test_why_it_recompiled_what_changed_ops_and_hlo(site, browser):
    browser.get(site.url + "/session/hlo")
    wait(browser, "document.querySelector('#recompiles .recompile')")
    why = browser.find_element("css selector", "#recompiles").text
    assert "Input 0 (f32[B,256], created at train.py:14): B = 8, 12, 16, 20, 24 across 5 compiles." in why
    assert "multiples of 8: 8, 16, 24" in why

    # A compile row says what changed vs the previous graph of its place; a click explains it.
    cell(browser, "compiles-table", "changed", "input 0: f32[12,256] -> f32[16,256]").click()
    wait(browser, "document.querySelector('#compile-detail .compile-changed')")
    detail = browser.find_element("css selector", "#compile-detail").text
    assert "program 116" in detail and "input 0: f32[12,256] -> f32[16,256]" in detail
    assert "B = 8, 12, 16, 20, 24" in detail

    # A click on a graph shows its ops; a click on an op its HLO.
    cell(browser, "graphs-table", "graph", "train_step [B=20]").click()
    wait(browser, "document.getElementById('ops-title').textContent === 'Ops of train_step [B=20] on localhost:9012'")
    assert browser.find_element("id", "ops-title").text == "Ops of train_step [B=20] on localhost:9012"  # not upper-cased
    wait(browser, "document.querySelectorAll('#ops-table .ag-center-cols-container .ag-row').length === 5")
    assert cell(browser, "ops-table", "op", "dot.1").find_element("xpath", "..").text.split("\n")[:2] == ["dot.1", "dot"]
    cell(browser, "ops-table", "op", "add_relu_fusion").click()
    wait(browser, "document.getElementById('hlo-text').textContent.startsWith('%add_relu_fusion')")
    hlo = browser.find_element("id", "hlo-text").text
    assert hlo.startswith("%add_relu_fusion = f32[20,64] fusion(") and "%fused_add_relu_fusion {" in hlo
    assert "train.py:15" in browser.find_element("id", "lines-table").text
    screenshot(browser, "session-graphs")
    assert severe_console_errors(browser) == []
