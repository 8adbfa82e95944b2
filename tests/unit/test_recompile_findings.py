"""explained_findings: recompilation findings completed with their place's explanation, as new findings."""
from __future__ import annotations

from xlaprof.analysis.compiles.recompiles import ChangeKind, RecompileExplanation
from xlaprof.analysis.findings.findings import Finding, FindingKind
from xlaprof.analysis.findings.recompile_findings import explained_findings
from xlaprof.analysis.host.span_index import NO_SPAN


def _explanation(span: str, summary: str, advice: str) -> RecompileExplanation:
    return RecompileExplanation(span, "t.py:1", ["w0"], 2, 2, 10.0, ChangeKind.SHAPE, summary, advice)


def test_recompilation_findings_get_their_places_summaries_and_advice_as_new_findings():
    given = [Finding(FindingKind.RECOMPILATION, 5.0, "step", "t.py:3", "generic", "2 compiles in step"),
             Finding(FindingKind.RECOMPILATION, 4.0, None, "t.py:9", "generic", "2 compiles outside any span"),
             Finding(FindingKind.COMPILE, 3.0, "step", "t.py:3", "compile advice", "1 compile in step"),
             Finding(FindingKind.RECOMPILATION, 2.0, "eval", "t.py:5", "generic", "2 compiles in eval")]
    explanations = [_explanation("step", "B = 8, 16.", "Pad B."), _explanation("step", "S = 2, 3.", "Pad B."),
                    _explanation(NO_SPAN, "A one-off.", "Nothing to fix.")]
    found = explained_findings(given, explanations)
    assert [(f.detail, f.advice) for f in found] == [
        ("2 compiles in step. B = 8, 16. S = 2, 3.", "Pad B."),
        ("2 compiles outside any span. A one-off.", "Nothing to fix."),
        ("1 compile in step", "compile advice"),  # not a recompilation
        ("2 compiles in eval", "generic")]  # no explanation for its span
    assert [(f.detail, f.advice) for f in given][:2] == [("2 compiles in step", "generic"),
                                                         ("2 compiles outside any span", "generic")]
