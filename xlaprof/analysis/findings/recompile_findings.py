"""Recompilation findings completed with why their place recompiled.

Contract: ``explained_findings(findings, explanations)`` returns new findings, in the given order:
each ``recompilation`` finding whose span has ``RecompileExplanation``s (``compiles.recompiles``;
a finding outside any span matches the explanations of ``NO_SPAN``) has their summaries appended
to its detail and their advice (each once, in order) instead of the generic one; every other
finding is returned as it is. The given findings are left as they are.
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
    if finding.kind is not FindingKind.RECOMPILATION or not mine:
        return finding
    return replace(finding, detail=finding.detail + ". " + " ".join(e.summary for e in mine),
                   advice=" ".join(dict.fromkeys(e.advice for e in mine)))
