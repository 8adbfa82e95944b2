"""Findings matched across two sessions: by kind and source line, else kind and span; what moved
is resolved, new or changed, and small changes or tiny findings that come and go are not."""
from __future__ import annotations

from xlaprof.analysis.compare.finding_match import FindingStatus, MatchConfig, match_findings
from xlaprof.analysis.findings.findings import Finding, FindingKind

READ, COMPILE, FALLBACK = FindingKind.TRANSFER_FROM_DEVICE, FindingKind.COMPILE, FindingKind.CPU_FALLBACK


def finding(kind, lost_us, span=None, source=None, count=0) -> Finding:
    return Finding(kind=kind, lost_us=lost_us, span=span, source=source, advice="", detail="", count=count)


def statuses(changes) -> list[tuple]:
    return [(c.status.value, c.finding.kind.value, c.finding.span, c.finding.source) for c in changes]


def test_a_read_gone_is_resolved_and_a_new_compile_is_new_costliest_change_first():
    before = [finding(READ, 1_600_000, "log_loss", "train.py:44"), finding(COMPILE, 20_000, "train_step", "train.py:30")]
    after = [finding(COMPILE, 20_500, "train_step", "train.py:30"), finding(COMPILE, 90_000, "eval", "eval.py:3")]
    changes = match_findings(before, after)
    assert statuses(changes) == [("resolved", "transfer_from_device", "log_loss", "train.py:44"),
                                 ("new", "compile", "eval", "eval.py:3"),
                                 ("unchanged", "compile", "train_step", "train.py:30")]
    assert changes[0].lost_delta_us == -1_600_000 and changes[1].lost_after_us == 90_000


def test_the_same_source_matches_even_when_the_span_was_renamed():
    changes = match_findings([finding(READ, 50_000, "log", "train.py:44")],
                             [finding(READ, 10_000, "log_loss", "train.py:44")])
    assert statuses(changes) == [("changed", "transfer_from_device", "log_loss", "train.py:44")]
    assert changes[0].before.span == "log"


def test_without_a_source_findings_match_by_span_and_kinds_never_mix():
    changes = match_findings([finding(READ, 50_000, "log_loss"), finding(COMPILE, 50_000, "log_loss")],
                             [finding(READ, 50_000, "log_loss", "train.py:44")])
    assert sorted(statuses(changes)) == [("resolved", "compile", "log_loss", None),
                                         ("unchanged", "transfer_from_device", "log_loss", "train.py:44")]


def test_several_findings_of_one_key_pair_costliest_with_costliest():
    before = [finding(READ, 10_000, "a"), finding(READ, 500_000, "a")]
    after = [finding(READ, 490_000, "a")]
    changes = match_findings(before, after)
    assert [(c.status.value, c.lost_before_us, c.lost_after_us) for c in changes] == [
        ("resolved", 10_000, 0.0), ("unchanged", 500_000, 490_000)]


def test_changed_needs_both_the_relative_and_the_absolute_threshold():
    config = MatchConfig(changed_rel=0.10, changed_abs_us=1000.0)
    big_but_small_share = match_findings([finding(READ, 1_000_000, "a")], [finding(READ, 1_050_000, "a")], config)
    small_but_large_share = match_findings([finding(READ, 500, "a")], [finding(READ, 1400, "a")], config)
    both = match_findings([finding(READ, 10_000, "a")], [finding(READ, 12_000, "a")], config)
    assert [c[0].status for c in (big_but_small_share, small_but_large_share, both)] == [
        FindingStatus.UNCHANGED, FindingStatus.UNCHANGED, FindingStatus.CHANGED]


def test_tiny_findings_that_come_and_go_are_not_news():
    changes = match_findings([finding(READ, 300, "a")], [finding(COMPILE, 800, "b")])
    assert {c.status for c in changes} == {FindingStatus.UNCHANGED}


def test_findings_that_lose_no_time_compare_presence_and_count():
    same = match_findings([finding(FALLBACK, 0.0, count=3)], [finding(FALLBACK, 0.0, count=3)])
    more = match_findings([finding(FALLBACK, 0.0, count=3)], [finding(FALLBACK, 0.0, count=5)])
    gone = match_findings([finding(FALLBACK, 0.0, count=3)], [])
    assert [c[0].status.value for c in (same, more, gone)] == ["unchanged", "changed", "resolved"]


def test_identical_findings_are_all_unchanged():
    findings = [finding(READ, 70_000, "log_loss", "t.py:5"), finding(COMPILE, 9_000, "step", "t.py:2"),
                finding(FALLBACK, 0.0, count=2)]
    assert {c.status for c in match_findings(findings, list(findings))} == {FindingStatus.UNCHANGED}


def test_a_recompilation_and_a_compile_at_one_line_are_one_finding_that_changed():
    recompile = FindingKind.RECOMPILATION
    before = [finding(recompile, 685_700, "train_step", "train.py:65"), finding(READ, 5_000, "log", "train.py:70")]
    after = [finding(COMPILE, 400_000, "train_step", "train.py:65"),
             finding(COMPILE, 50_000, "train_step", "train.py:99")]
    changes = match_findings(before, after)
    assert statuses(changes) == [("changed", "compile", "train_step", "train.py:65"),
                                 ("new", "compile", "train_step", "train.py:99"),
                                 ("resolved", "transfer_from_device", "log", "train.py:70")]
    assert changes[0].before.kind is recompile and changes[0].lost_delta_us == -285_700
    # kinds charged to different causes never mix, even at one line
    mixed = match_findings([finding(READ, 9_000, "s", "a.py:1")], [finding(COMPILE, 9_000, "s", "a.py:1")])
    assert [c.status.value for c in mixed] == ["resolved", "new"]
