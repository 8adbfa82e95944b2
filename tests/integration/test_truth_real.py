"""The truth on code nobody here wrote: transformers' GPT-2 and a slow-loader loop on real CPU-device
workers, with no spans and no debug flags, captured by the real CLI.

Each claim is checked against a truth built apart from the analysis: the lines the workload itself
marks (``# READ:``, ``# LOADER:``), xprof's own count of the capture's TransferFromDevice events,
and an A/B arm without the reads (``--no-reads``).
"""
from __future__ import annotations

import pytest

from tests.conftest import capture_arms
from tests.support.oracle import transfers_in_capture
from tests.support.workers import source_line
from tests.support.workloads import gpt2_worker
from tests.support.workloads.recompile_worker import FAST_COMPILE_ENV
from xlaprof.report import analysis_json

pytestmark = pytest.mark.torch_xla

GPT2 = "tests.support.workloads.gpt2_worker"
WORKLOAD = gpt2_worker.__file__
READ_LINES = {f"{WORKLOAD}:{source_line(gpt2_worker, marker)}" for marker in ("# READ: item", "# READ: element")}
LOADER_LINE = f"{WORKLOAD}:{source_line(gpt2_worker, '# LOADER')}"
ARMS = {
    "gpt2": ["--element-read"],
    "gpt2_no_reads": ["--element-read", "--no-reads"],  # the A/B arm: the same loop without the reads
}
SLOW_LOADER = {"slow_loader": ["--model", "mlp", "--loader-sleep-ms", "5", "--no-reads"]}


def reports(tmp_path_factory, arms: dict[str, list[str]], env: dict | None = None) -> dict[str, tuple[str, dict]]:
    captured = capture_arms(str(tmp_path_factory.mktemp("truth")), arms, GPT2, env=env)
    return {arm: (session, analysis_json(analysis)) for arm, (session, analysis) in captured.items()}


@pytest.fixture(scope="module")
def truth_sessions(tmp_path_factory) -> dict[str, tuple[str, dict]]:
    # Compiled without LLVM's optimizations (the same graphs in two thirds of the time): no test of GPT-2
    # weighs the arms' costs against each other (the A/B arm is checked for having no reads).
    return reports(tmp_path_factory, ARMS, env=FAST_COMPILE_ENV)


@pytest.fixture(scope="module")
def slow_loader(tmp_path_factory) -> dict:
    return reports(tmp_path_factory, SLOW_LOADER)["slow_loader"][1]


def test_gpt2_host_python_without_spans_is_named_not_unattributed(truth_sessions):
    _, report = truth_sessions["gpt2"]
    idle = report["device_idle_us"]
    assert report["notes"] == []
    assert report["idle_by_cause_us"]["unattributed"] <= 0.05 * idle, report["idle_by_cause_us"]
    assert report["idle_by_cause_us"]["host_tracing"] >= 0.3 * idle, report["idle_by_cause_us"]
    tracing = [f for f in report["findings"] if f["kind"] == "host_tracing"]
    # The mislabel the issue reported (unattributed the top finding while the stacks showed tracing) is
    # gone: the top findings are host work. (Time before the sampler starts, up to POLL_S into a capture,
    # stays unattributed: bounded by the 5% above.)
    assert tracing and all(f["kind"] != "unattributed" for f in report["findings"][:2])
    # The host's work is named at the lines the stacks show: the model and the optimizer, not sleeping.
    assert any(f["source"] and f["source"].startswith(WORKLOAD) for f in tracing[:3]), tracing[:3]


def test_gpt2_every_read_is_counted_at_its_own_line(truth_sessions):
    session, report = truth_sessions["gpt2"]
    reads = report["transfers_from_device"]
    assert reads["count"] == transfers_in_capture(session) > 0  # every read in the capture, per xprof
    by_source = reads["by_source"]
    assert set(by_source) <= READ_LINES, by_source  # none at a neighbour's line
    # 98% of the reads at their line (the reading ops mark their calls), or all but the one a capture's
    # start may cut (a call begun before the recording, not marked).
    assert sum(by_source.values()) >= min(0.98 * reads["count"], reads["count"] - 1), (by_source, reads["count"])
    assert len(by_source) == 2, by_source  # the short element read too, at its own line


def test_the_ab_arm_without_the_reads_has_none_and_their_lines_vanish(truth_sessions):
    session, report = truth_sessions["gpt2_no_reads"]
    assert transfers_in_capture(session) == 0 and report["transfers_from_device"]["count"] == 0
    assert not READ_LINES & {row["source"] for row in report["idle_by_line"]}


@pytest.mark.exclusive
def test_a_slow_loader_is_blocked_at_its_sleep(slow_loader):
    """The loader's 5 ms sleep is the top blocked finding, and most of its line's idle time is blocked.
    It runs alone on the machine (the exclusive phase): the sampler resolves a 5 ms sleep only with a
    core to wake on. Beside the suite's other worker it backed off to a sample every 8 ms, and the
    sleep's runs, 10-14 ms long, held more of the Python after the sleep than the sleep itself: in
    two of four fresh clones' first phases the line was more tracing than blocked (126 ms against 73
    ms, and 111 against 99 after a run's blocked time was counted apart). The MLP's Python took three
    times as long there too, and the sync's tracing rightly passed the sleep in rank."""
    report = slow_loader
    at_sleep = {f["kind"]: f["lost_us"] for f in report["findings"] if f["source"] == LOADER_LINE}
    assert at_sleep.get("host_blocked", 0.0) > at_sleep.get("host_tracing", 0.0), at_sleep
    blocked = next(f for f in report["findings"] if f["kind"] == "host_blocked")
    assert blocked["source"] == LOADER_LINE, report["findings"][:5]
    assert "DataLoader" in blocked["advice"] and "MpDeviceLoader" in blocked["advice"]
    assert report["idle_by_cause_us"]["unattributed"] <= 0.05 * report["device_idle_us"]
