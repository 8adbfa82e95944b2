"""Recompilation findings completed with why their place recompiled.

Contract: ``explained_findings(findings, explanations)`` returns new findings, in the given order:
each ``recompilation`` finding whose place has ``RecompileExplanation``s (``compiles.recompiles``)
has their summaries appended to its detail and their advice (each once, in order) instead of the
generic one; every other finding is returned as it is. A finding in a span is placed by the span;
one outside any span by its line (explanations of ``NO_SPAN`` at the finding's source, or at the
library lines behind it where it is the user's call into a library; where none is, those whose line
is unknown): another line's compiles never explain it. The given findings are left as they are.
"""
from __future__ import annotations

from dataclasses import replace

from xlaprof.analysis.compiles.recompiles import RecompileExplanation
from xlaprof.analysis.findings.findings import Finding, FindingKind
from xlaprof.analysis.host.span_index import NO_SPAN


def explained_findings(findings: list[Finding], explanations: list[RecompileExplanation]) -> list[Finding]:
    by_span: dict[str, list[RecompileExplanation]] = {}
    for e in explanations:
        by_span.setdefault(e.span, []).append(e)
    return [_explained(finding, by_span.get(finding.span or NO_SPAN, [])) for finding in findings]


def _explained(finding: Finding, mine: list[RecompileExplanation]) -> Finding:
    if finding.span is None:  # outside any span: the place is the line
        lines = {finding.source, *(line.source for line in finding.inside)}
        mine = [e for e in mine if e.source in lines] or [e for e in mine if e.source is None]
    if finding.kind is not FindingKind.RECOMPILATION or not mine:
        return finding
    return replace(finding, detail=finding.detail + ". " + " ".join(e.summary for e in mine),
                   advice=" ".join(dict.fromkeys(e.advice for e in mine)))
