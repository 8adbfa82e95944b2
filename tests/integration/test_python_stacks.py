"""The exact line in code nobody here instrumented: real torch_xla workers, captured by the real
CLI, analysed from their sampled Python stacks (no xlaprof spans, no debug flags).

Workloads: ``tests.support.workloads.denoise_worker`` (a sampling loop calling the library-like
``tiny_scheduler``, whose reads are ``(self.timesteps == timestep).nonzero().item()``), in variants
that differ in one thing, and ``diffusers_worker`` (diffusers' own DPM-Solver scheduler and UNet).
"""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from tests.conftest import capture_arms
from tests.support.oracle import transfers_in_capture
from tests.support.workers import REPO, run_python, source_line
from tests.support.workloads import diffusers_worker
from tests.support.workloads.recompile_worker import FAST_COMPILE_ENV
from xlaprof.analysis.findings.advice import ADVICE_CLOSURE, ADVICE_DATA_DEPENDENT, ADVICE_READ_IN_LIBRARY
from xlaprof.report import analysis_json

pytestmark = pytest.mark.torch_xla

DENOISE = "tests.support.workloads.denoise_worker"
DIFFUSERS = "tests.support.workloads.diffusers_worker"
DPM_SOLVER = "diffusers/schedulers/scheduling_dpmsolver_multistep.py"
VARIANTS = {
    "library": [],  # no spans at all
    "reads_xp": ["--spans", "xp", "--host-work-ms", "4"],  # torch_xla's own spans only
    "no_reads_xp": ["--spans", "xp", "--host-work-ms", "4", "--no-scheduler-reads"],  # the A/B twin
    "closure": ["--no-scheduler-reads", "--closure-every", "1"],
    "old_server": ["--spans", "xp", "--server", "xp"],  # xp.start_server: no sampler
}
# The workloads' files, found without importing them (they import torch: two seconds of every collection).
SCHEDULER_FILE = importlib.util.find_spec("tests.support.workloads.tiny_scheduler").origin
DENOISE_FILE = importlib.util.find_spec(DENOISE).origin
READ_LINE = f"{SCHEDULER_FILE}:{source_line(SCHEDULER_FILE, '.nonzero().item()')}"


@pytest.fixture(scope="module")
def stacks_reports(tmp_path_factory) -> dict[str, tuple[dict, object]]:
    captured = capture_arms(str(tmp_path_factory.mktemp("stacks")), VARIANTS, DENOISE)
    reports = {variant: (analysis_json(analysis), analysis) for variant, (_, analysis) in captured.items()}
    return reports


def test_a_read_inside_a_library_without_spans_is_named_with_its_line_and_caller(stacks_reports):
    report, _ = stacks_reports["library"]
    assert report["notes"] == []
    read = next(f for f in report["findings"] if f["kind"] == "transfer_from_device")
    assert read["source"] == READ_LINE and read["span"] is None
    assert read["code"] == "return (self.timesteps == timestep).nonzero().item()"
    assert "denoise_worker.py:" in read["called_from"]
    assert any("denoise_worker.py" in frame and "sample" in frame for frame in read["stack"])
    assert read["stack"][-1].startswith(READ_LINE) and read["advice"] == ADVICE_DATA_DEPENDENT
    assert read["count"] >= 10 and read["lost_us"] > 0
    top_line = report["idle_by_line"][0]
    assert (top_line["source"], top_line["cause"]) == (READ_LINE, "transfer_from_device")
    # The read's line leads the findings: it is what costs the device most in this loop.
    assert report["findings"][0]["source"] == READ_LINE


def test_torch_xla_spans_are_user_spans_and_the_stack_gives_their_line(stacks_reports):
    report, analysis = stacks_reports["reads_xp"]
    spans = set(analysis.workers[0].host.spans.name)
    assert {"denoise", "unet", "scheduler_step"} <= spans
    steps = report["steps"][next(iter(report["steps"]))]
    assert len(steps) >= 10 and all(s["name"] == "denoise" for s in steps)
    read = next(f for f in report["findings"] if f["kind"] == "transfer_from_device")
    assert read["span"] == "scheduler_step" and read["source"] == READ_LINE


def test_a_read_in_a_step_closure_is_named_and_advised_as_one(stacks_reports):
    report, _ = stacks_reports["closure"]
    read = next(f for f in report["findings"] if f["kind"] == "transfer_from_device")
    assert read["source"].endswith("denoise_worker.py:" + str(source_line(DENOISE_FILE, "latents.norm().item()")))
    assert any("_run_step_closures" in frame for frame in read["stack"])
    assert read["advice"] == ADVICE_CLOSURE


def test_the_reads_are_charged_their_true_cost(stacks_reports):
    """A/B: the device idle time per step that disappears when the scheduler stops reading
    (measured from the device timeline of each run: step time minus busy time, so that the CPU
    device running slower in one run than the other, the cores being shared, does not blur it) is
    what the analysis charges the reads per step, within 30%. (Step times are not compared: on the
    CPU device the host's work shares the cores with the device's, so a run without reads, whose
    host and device overlap, can have the slower steps.)"""
    per_step = {}
    for variant in ("reads_xp", "no_reads_xp"):
        report, _ = stacks_reports[variant]
        steps = next(iter(report["steps"].values()))
        per_step[variant] = (float(np.median([s["wall_us"] for s in steps])),
                             report["device_idle_us"] / len(steps),
                             report["idle_by_cause_us"]["transfer_from_device"] / len(steps))
    (_, idle_r, charged), (step_n, idle_n, _) = per_step["reads_xp"], per_step["no_reads_xp"]
    saving = idle_r - idle_n
    assert saving > 0.1 * step_n, per_step  # the reads idle the device visibly
    assert abs(charged - saving) <= 0.3 * saving, per_step


def test_a_worker_without_the_sampler_degrades_to_spans_and_says_so_once(stacks_reports):
    report, _ = stacks_reports["old_server"]
    assert len(report["notes"]) == 1 and "no Python stacks" in report["notes"][0]
    assert report["idle_by_line"] == []
    read = next(f for f in report["findings"] if f["kind"] == "transfer_from_device")
    assert read["span"] == "scheduler_step" and read["stack"] == []


@pytest.fixture(scope="module")
def diffusers_reports(tmp_path_factory) -> dict[str, tuple[str, dict]]:
    arms = {"dpm": [], "unet_only": ["--unet-only"]}  # the A/B arm: the UNet alone, without the scheduler
    # Compiled without LLVM's optimizations (the same graphs, the UNet's compiles in half the time): no
    # test here weighs the arms' costs against each other.
    captured = capture_arms(str(tmp_path_factory.mktemp("diffusers")), arms, DIFFUSERS, env=FAST_COMPILE_ENV)
    return {arm: (session, analysis_json(analysis)) for arm, (session, analysis) in captured.items()}


def test_reads_deep_inside_diffusers_are_one_finding_at_the_users_call(diffusers_reports):
    session, report = diffusers_reports["dpm"]
    rows = [row for row in report["idle_by_line"] if row["cause"] == "transfer_from_device"]
    assert rows and all(row["source"].split(":")[0].endswith(DPM_SOLVER) for row in rows), \
        [row["source"] for row in rows]  # every read at the scheduler's lines, none at the UNet's
    transfers = report["transfers_from_device"]
    assert set(transfers["by_source"]) == {row["source"] for row in rows}
    # The truth, measured apart with torch_xla's metrics: one lookup reads at .nonzero(), then .item().
    lookup_run = run_python("from tests.support.workloads import dpm_lookup_reads; dpm_lookup_reads.main()",
                            env={"PYTHONPATH": REPO, **FAST_COMPILE_ENV})
    assert lookup_run.returncode == 0, lookup_run.stderr[-2000:]
    measured = json.loads(lookup_run.stdout)
    reading_lines = {f"{measured['file']}:{line}" for line, _ in measured["reads"]}
    assert len(reading_lines) == 2 and set(transfers["by_source"]) == reading_lines, (measured, transfers)
    # Every read is named (the reading ops mark their calls), each at its own line: a lookup reads once
    # at each, so the two lines count alike (but for a lookup the capture's edge cut in two).
    assert sum(transfers["by_source"].values()) >= 0.98 * transfers_in_capture(session), transfers
    at_nonzero, at_item = (transfers["by_source"][f"{measured['file']}:{line}"] for line, _ in measured["reads"])
    assert abs(at_nonzero - at_item) <= 1, transfers
    lookup = rows[0]
    assert lookup["code"] and ("nonzero" in lookup["code"] or ".item()" in lookup["code"])
    assert any("diffusers_worker.py" in frame and "sample" in frame for frame in lookup["stack"])
    # The scheduler's reads are one finding at the user's call, its lines inside, ranked by their sum.
    call = f"{diffusers_worker.__file__}:{source_line(diffusers_worker, '# USER CALL: scheduler.step')}"
    reads = [f for f in report["findings"] if f["kind"] == "transfer_from_device" and f["source"]]
    assert [f["source"] for f in reads] == [call], [f["source"] for f in reads]
    inside = reads[0]["inside"]
    assert {line["source"] for line in inside} == {row["source"] for row in rows}
    assert reads[0]["count"] == sum(line["pieces"] for line in inside) == sum(transfers["by_source"].values())
    # It holds the idle of every read (all have their line).
    assert reads[0]["lost_us"] >= 0.95 * report["idle_by_cause_us"]["transfer_from_device"]
    assert reads[0]["advice"] in (ADVICE_DATA_DEPENDENT, ADVICE_READ_IN_LIBRARY)


def test_diffusers_host_work_is_named_and_the_unet_reads_nothing(diffusers_reports):
    _, report = diffusers_reports["dpm"]
    assert report["idle_by_cause_us"]["unattributed"] <= 0.05 * report["device_idle_us"], report["idle_by_cause_us"]
    session, unet_only = diffusers_reports["unet_only"]
    # The A/B arm: without the scheduler no read happens (xprof's count), and none is reported.
    assert transfers_in_capture(session) == 0 and unet_only["transfers_from_device"]["count"] == 0
