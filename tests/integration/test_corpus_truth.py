"""xlaprof's analysis scored against an oracle it did not compute, on the corpus of real third-party
workloads (``tests/support/corpus``; the oracle: ``tests/support/truth``).

The session fixture runs the suite's cases (``cases.SUITE_CASES``: all but the bench's own) twice (captured with torch_xla's per-step counters beside
it; under a line tracer) and analyses each capture once; every test reads those results. The bounds
are the truth issue's: each cause within 10 points of the truth's share of idle (widened by the
truth's own 95% interval where it is measured by an A/B arm, and scored in that arm's blocks, at
the point of its range nearest the analysis': the saving, less the host's other work slowed by the
reads, to the whole saving), >= 98% of reads and
>= 95% of compiles at their triggering line, no finding at a ``def``/``class``/decorator line or in xlaprof's
own code, the recompile explanation naming the values that changed, the advice fitting the dominant
cause. Every check holds on every case. Where the reads run partial graphs early that the step's
graph runs again, the device time the analysis finds rerun is within 40% of the device time the
arm without the reads saved (medians over the A/B pairs), widened by that saving's own 95% interval.
"""
from __future__ import annotations

import pytest

from tests.support.corpus.cases import CASES, SUITE_CASES
from tests.support.truth.corpus_run import record_corpus, score_corpus
from tests.support.truth.table import CAUSES

pytestmark = [pytest.mark.torch_xla, pytest.mark.exclusive]

READS_AT_LINE, COMPILES_AT_LINE, CAUSE_POINTS = 0.98, 0.95, 10.0
# The suite case whose reads' early graphs the step reruns: the arm without reads saved 20-31% of the
# device's time (a CPU fallback inside the backward; the bench's grad_clip_guard, 61%). The prediction
# was 0.91-1.29 of that saving over five runs, and 1.48 in a sixth whose saving's own 95% interval was
# +/-47% of it: the CPU device runs the same work faster or slower in one graph than in another from run
# to run, so the bound is widened by that interval (table.rerun_against_arm).
RERUN_CASES, RERUN_TOLERANCE = ("fallback_backward",), 0.4


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    # Compiled without LLVM's optimizations where no A/B arm measures (the UNet's two compiles take
    # half a minute, not a minute); bench/bench_truth.py captures with the default flags. The three line
    # tracers run two at a time (each keeps about one core busy: 111 s one at a time, 58 s two).
    return score_corpus(record_corpus(str(tmp_path_factory.mktemp("corpus")), SUITE_CASES, fast_compile=True,
                                      tracers_at_once=2))


@pytest.mark.parametrize("name", SUITE_CASES)
def test_each_cause_is_within_10_points_of_the_truth(corpus, name):
    score, error = corpus[name].score, corpus[name].truth.uncertainty_points  # the A/B truth's own interval
    off = {cause: round(points, 1) for cause, points in score.cause_points.items() if abs(points) > CAUSE_POINTS + error}
    assert not off, (off, error, score.report_share, score.truth_share)
    assert set(score.cause_points) == set(CAUSES)


@pytest.mark.parametrize("name", SUITE_CASES)
def test_reads_are_counted_and_named_at_their_triggering_line(corpus, name):
    score = corpus[name].score
    assert score.read_counts[0] == score.read_counts[1], score.read_counts  # every read, as torch_xla counts them
    assert score.reads_at_line >= READS_AT_LINE, (score.reads_at_line, corpus[name].report["transfers_from_device"])


@pytest.mark.parametrize("name", SUITE_CASES)
def test_compiles_are_counted_and_named_at_their_triggering_line(corpus, name):
    score = corpus[name].score
    assert score.compile_counts[0] == score.compile_counts[1], score.compile_counts
    assert score.compiles_at_line >= COMPILES_AT_LINE, corpus[name].truth.compiles


@pytest.mark.parametrize("name", SUITE_CASES)
def test_no_finding_is_at_a_def_line_or_in_xlaprofs_own_code(corpus, name):
    assert corpus[name].score.misplaced == []
    assert all(event["dur_us"] >= 0 for event in corpus[name].report["compile_events"])


@pytest.mark.parametrize("name", [c.name for c in CASES if c.changed and c.name in SUITE_CASES])
def test_a_recompile_is_explained_by_the_values_that_changed(corpus, name):
    assert corpus[name].explanation_names_change(), corpus[name].report["compiles"]["explained"]


@pytest.mark.parametrize("name", SUITE_CASES)
def test_the_advice_fits_the_dominant_cause(corpus, name):
    result = corpus[name]
    assert result.advice_fits(), ([(f["kind"], f["advice"]) for f in result.report["findings"][:3]],
                                  result.truth.idle_share)


@pytest.mark.parametrize("name", RERUN_CASES)
def test_the_device_time_a_reads_graph_costs_again_is_what_the_arm_without_reads_saved(corpus, name):
    predicted, saved, executed, error = corpus[name].rerun
    assert saved > 0.15 * executed, (saved, executed)  # the arm's saving is the case's point
    # within 40% of the saving, widened by the saving's own 95% interval over the pairs
    assert abs(predicted - saved) <= RERUN_TOLERANCE * saved + error, (predicted, saved, executed, error)
