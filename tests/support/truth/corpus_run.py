"""The corpus run end to end: both runner processes, then each case's session analysed and scored.

``record_corpus(workdir, names, fast_compile=False)`` runs ``runner`` in ``lines`` then ``capture`` mode
and returns the two records. The capture's processes run one after the other, after the last tracer's:
their timings are shared with no other process. The tracers' records are counts by line; with
``tracers_at_once`` that many run side by side (each keeps about one core busy; the suite's cases traced
two at a time gave the same counts as one at a time). The tracer's processes take the cases as the
capture's do, the same cases in each in the same order: a case runs after the cases its process ran
before it in both (state one leaves behind changes what the next one does: TorchDynamo, once it has
compiled a frame, turns torch.distributions' argument checks and their reads off in the whole process).
The cases with an A/B arm without reads are captured in a process of their own, its host and device
threads pinned to two cores (a read's cost is measured there); the others as a user runs them. Every
runner process keeps one sample per torch_xla metric (``XLA_METRICS_SAMPLES``: the same counts and
totals, read in 10 us, not 264: the tracer reads them at every traced line, the capture's step recorder
twice a step, inside the step it times). The line tracer records counts only (reads, compiles and
fallbacks by line), so its process compiles without LLVM's optimizations (``FAST_COMPILE_XLA_FLAGS``:
the same graphs and compiles, each compile about half as long); with ``fast_compile`` so does a process
capturing the cases whose compiles take a minute (``Case.slow_compiles``: their truth and their analysis
come from that one process). The others keep the default flags: an A/B arm's truth depends on the
device's speed, and a compile cut by half leaves the rest of the idle time twice its share, where the
truth's metric model of a read without an arm (its transfer alone) is furthest off.
With ``apart`` (the bench's default) each case is traced and captured in processes of its own, as a
user runs it; the suite captures them in those groups, a process each (its time has no room for a
process a case). ``load_records(workdir)`` reads back the records a ``record_corpus`` wrote.
``score_corpus(records)`` -> ``{case: CaseResult}``: the case's ``Truth``, the analysis report (the
JSON contract's dict, ``xlaprof.report.analysis_json``) and its ``Score`` (the shares of idle scored
in the truth's session: the A/B capture where the case has an arm), plus the case's own checks
(``checks``: the advice fits, the recompile explanation names the values that changed).
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tests.support.corpus.cases import ACCEPTED_FIXES, BY_NAME, ONE_OFF_COMPILE_FIXES, Case
from tests.support.truth.table import Score, Truth, rerun_against_arm, score
from tests.support.workloads.recompile_worker import FAST_COMPILE_XLA_FLAGS

# A metric's samples (1024 kept by default) are copied into a list at each read: 264 us a read, where the
# line tracer reads at every traced line and the step recorder twice a step. Both read counts and totals only.
METRICS_SAMPLES = "1"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _run(mode: str, names: list[str], out: str, logdir: str, timeout: float, pinned: bool = False,
         fast_compile: bool = False) -> dict:
    env = dict(os.environ, PJRT_DEVICE="CPU", XLA_METRICS_SAMPLES=METRICS_SAMPLES,
               PYTHONPATH=os.pathsep.join(filter(None, (REPO, os.environ.get("PYTHONPATH")))))
    if fast_compile:
        env["XLA_FLAGS"] = " ".join(filter(None, (os.environ.get("XLA_FLAGS"), FAST_COMPILE_XLA_FLAGS)))
    command = [sys.executable, "-m", "tests.support.truth.runner", "--mode", mode, "--cases", ",".join(names),
               "--out", out, "--logdir", logdir] + (["--pin-cores"] if pinned else [])
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    with open(f"{out}.log", "w") as log:
        log.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"the corpus runner ({mode}) failed: {done.stderr[-3000:]}")
    with open(out) as handle:
        return json.load(handle)


PINNED, FAST = "capture-pinned", "capture-fast"
CAPTURE_GROUPS = ("capture", FAST, PINNED)  # the kinds of capture process, and their record files


def _group(name: str) -> str:
    """The capture process of a case: pinned where an A/B arm measures a read's cost, else apart
    where the suite compiles it fast (``Case.slow_compiles``), else the plain one."""
    case = BY_NAME[name]
    if case.without_reads is not None:
        return PINNED
    return FAST if case.slow_compiles else "capture"


def _capture_processes(names: list[str], apart: bool) -> list[tuple[str, str, list[str]]]:
    """``(record file, group, cases)`` of each capture process: one a group, or one a case (``apart``)."""
    processes = []
    for group in CAPTURE_GROUPS:
        cases = [name for name in names if _group(name) == group]
        if apart:
            processes += [(f"{group}-{name}", group, [name]) for name in cases]
        elif cases:
            processes.append((group, group, cases))
    return processes


def record_corpus(workdir: str, names: list[str], timeout: float = 1500, fast_compile: bool = False,
                  apart: bool = False, tracers_at_once: int = 1) -> dict[str, dict]:
    """``{"lines": ..., "capture": ...}``: the runner's two records of the named cases; with ``apart``
    each case traced and captured in processes of its own, as a user runs a script (no other case's threads
    alive beside it: loader threads, a tqdm monitor, queue feeders); ``tracers_at_once`` tracer processes
    at a time."""
    logdir = os.path.join(workdir, "logs")

    def run(process: tuple[str, str, str | None, list[str]]) -> None:
        mode, record, group, cases = process
        _run(mode, cases, os.path.join(workdir, f"{record}.json"), logdir, timeout, group == PINNED,
             fast_compile=mode == "lines" or (fast_compile and group == FAST))

    processes = _processes(names, apart)
    with ThreadPoolExecutor(tracers_at_once) as tracers:
        list(tracers.map(run, [p for p in processes if p[0] == "lines"]))
    for process in processes:
        if process[0] == "capture":
            run(process)
    return load_records(workdir)


def _processes(names: list[str], apart: bool) -> list[tuple[str, str, str | None, list[str]]]:
    """``(mode, record file, group, cases)`` of each runner process, in the order they run: the line
    tracer's (unpinned), then the capture's, over the same cases in each."""
    captures = _capture_processes(names, apart)
    return [("lines", f"lines-{record}", None, cases) for record, _, cases in captures] + \
        [("capture", record, group, cases) for record, group, cases in captures]


def load_records(workdir: str) -> dict[str, dict]:
    def merged(prefix: str) -> dict:
        records = {}
        for path in sorted(glob.glob(os.path.join(workdir, f"{prefix}*.json"))):
            with open(path) as handle:
                records.update(json.load(handle))
        return records

    return {"lines": merged("lines"), "capture": merged("capture")}


@dataclass
class CaseResult:
    case: Case
    truth: Truth
    report: dict
    score: Score
    # (device time the analysis finds the reads' early graphs ran again, device time the arm saved, with
    # the reads), medians over the A/B pairs counted: ``table.rerun_against_arm``; None without an arm
    rerun: tuple[float, float, float, float] | None = None

    def advice_fits(self) -> bool:
        """The top finding of the truth's dominant cause names the line to change (its ``source``) and
        gives one of the fixes accepted for it (``cases.ACCEPTED_FIXES``, the case's own ``fixes``
        first), and none of the case's ``unfit`` ones."""
        dominant = max(self.truth.idle_share, key=self.truth.idle_share.get)
        accepted = self.case.fixes.get(dominant, ()) + ACCEPTED_FIXES[dominant]
        if dominant == "compile" and max(self.truth.compiles.values(), default=0) <= 1:
            accepted = ONE_OFF_COMPILE_FIXES  # each line compiled once: warming up, not a changing shape
        kinds = {"compile": ("compile", "recompilation")}.get(dominant, (dominant,))
        top = next((f for f in self.report["findings"] if f["kind"] in kinds), None)
        advice = (top or {}).get("advice") or ""
        return (top is not None and top["source"] is not None
                and any(fix.lower() in advice.lower() for fix in accepted)
                and not any(word.lower() in advice.lower() for word in self.case.unfit))

    def explanation_names_change(self) -> bool:
        """Where shapes changed, an explanation of the recompiles names every value that changed."""
        if not self.case.changed:
            return True
        texts = [" ".join(str(v) for v in e.values()) for e in self.report["compiles"]["explained"]]
        return any(all(value in text for value in self.case.changed) for text in texts)


def score_corpus(records: dict[str, dict]) -> dict[str, CaseResult]:
    from xlaprof.analysis import analyze
    from xlaprof.report import analysis_json
    from xlaprof.session import Session

    results = {}
    for name, captured in records["capture"].items():
        truth = Truth.of(captured, records["lines"][name])
        analysis = analyze(Session.load(captured["session"]))
        report = analysis_json(analysis)
        scored = analysis if truth.session == captured["session"] else analyze(Session.load(truth.session))
        rerun = rerun_against_arm(scored, truth.pairs) if truth.pairs else None
        results[name] = CaseResult(BY_NAME[name], truth, report, score(report, truth, scored), rerun)
    return results
