"""Findings of two sessions matched to each other: what a change resolved, what it brought, what moved.

Contract: ``match_findings(before, after, config)`` pairs the findings of two analyses and
returns one ``FindingChange`` per finding of either side (a pair, or one side alone), ordered by
how much their lost time moved (largest first; unchanged ones last). Two findings match when
they have the same ``kind`` and the same ``source`` (the Python line); findings left over match
across kinds charged to the same idle cause at the same line (a ``recompilation`` before and a
``compile`` after at one line are one finding that changed, not one resolved and one new); the
rest, and findings without a source, match by ``kind`` and ``span``. Within one key, findings pair one to one,
costliest with costliest. Lost time moved when it changed by more than ``changed_rel`` of the
larger and by more than ``changed_abs_us`` (an absent finding lost nothing); for findings that
lose no time (CPU fallbacks, forced executions) when one appeared or vanished or its count
changed. What moved is ``resolved`` (only before), ``new`` (only after) or ``changed`` (both);
the rest, tiny findings that come and go between captures included, is ``unchanged``. Nothing
else of a ``Finding`` is looked at.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import Enum

from xlaprof.analysis.common.notebook_repr import short_repr
from xlaprof.analysis.findings.findings import Finding


class FindingStatus(str, Enum):
    RESOLVED = "resolved"
    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class MatchConfig:
    changed_rel: float = 0.10  # a matched finding whose lost time moved by more than this share of the larger...
    changed_abs_us: float = 1000.0  # ...and by more than this many microseconds has changed


@dataclass(frozen=True)
class FindingChange:
    __repr__ = short_repr
    status: FindingStatus
    before: Finding | None  # None: new
    after: Finding | None  # None: resolved

    @property
    def finding(self) -> Finding:
        """The finding as it is now, or as it was if it is gone."""
        return self.after or self.before

    @property
    def lost_before_us(self) -> float:
        return self.before.lost_us if self.before else 0.0

    @property
    def lost_after_us(self) -> float:
        return self.after.lost_us if self.after else 0.0

    @property
    def lost_delta_us(self) -> float:
        return self.lost_after_us - self.lost_before_us


def match_findings(before: list[Finding], after: list[Finding], config: MatchConfig = MatchConfig()) -> list[FindingChange]:
    pairs: list[tuple[Finding | None, Finding | None]] = []
    left_before, left_after = list(before), list(after)
    for key in (_by_source, _by_cause_at_source, _by_span):
        matched, left_before, left_after = _pair(left_before, left_after, key)
        pairs += matched
    pairs += [(f, None) for f in left_before] + [(None, f) for f in left_after]
    changes = [FindingChange(_status(b, a, config), b, a) for b, a in pairs]
    changes.sort(key=lambda c: (c.status is FindingStatus.UNCHANGED, -abs(c.lost_delta_us), -c.finding.lost_us))
    return changes


def _by_source(f: Finding) -> tuple | None:
    return (f.kind.value, f.source) if f.source else None


def _by_cause_at_source(f: Finding) -> tuple | None:
    cause = f.kind.cause
    return (cause.value, f.source) if f.source and cause is not None else None


def _by_span(f: Finding) -> tuple:
    return f.kind.value, f.span


def _pair(before: list[Finding], after: list[Finding], key) -> tuple[list, list[Finding], list[Finding]]:
    """Pairs of findings with the same key, costliest first; and the findings left on each side."""
    groups: dict[tuple, list[list[Finding]]] = defaultdict(lambda: [[], []])
    left_before, left_after = [], []  # first the findings without a key, in their order
    for findings, left, side in ((before, left_before, 0), (after, left_after, 1)):
        for f in findings:
            k = key(f)
            (left if k is None else groups[k][side]).append(f)
    pairs = []
    for olds, news in groups.values():
        olds.sort(key=lambda f: -f.lost_us)
        news.sort(key=lambda f: -f.lost_us)
        pairs += list(zip(olds, news))
        left_before += olds[len(news):]
        left_after += news[len(olds):]
    return pairs, left_before, left_after


def _status(before: Finding | None, after: Finding | None, config: MatchConfig) -> FindingStatus:
    lost_before, lost_after = (f.lost_us if f else 0.0 for f in (before, after))
    if lost_before == 0 and lost_after == 0:  # findings that cost no time (CPU fallbacks): presence, counts
        moved = before is None or after is None or before.count != after.count
    else:
        delta = abs(lost_after - lost_before)
        moved = delta > config.changed_rel * max(lost_before, lost_after) and delta > config.changed_abs_us
    if not moved:
        return FindingStatus.UNCHANGED
    return FindingStatus.RESOLVED if after is None else FindingStatus.NEW if before is None else FindingStatus.CHANGED
