"""explained_findings: recompilation findings completed with their place's explanation, as new findings."""
from __future__ import annotations

from xlaprof.analysis.compiles.compiles import CompileRecord, summarize_compiles
from xlaprof.analysis.compiles.recompiles import ChangeKind, RecompileExplanation
from xlaprof.analysis.findings.findings import Finding, FindingKind, rank_findings
from xlaprof.analysis.findings.recompile_findings import explained_findings
from xlaprof.analysis.host.span_index import NO_SPAN
from xlaprof.analysis.idle.call_sites import LibraryLine
from xlaprof.analysis.idle.idle_costs import Cause, CauseCost
from xlaprof.analysis.idle.reads import ReadSummary


def _explanation(span: str, summary: str, advice: str, source: str | None = "t.py:1") -> RecompileExplanation:
    return RecompileExplanation(span, source, ["w0"], 2, 2, 10.0, ChangeKind.SHAPE, summary, advice)


def test_recompilation_findings_get_their_places_summaries_and_advice_as_new_findings():
    given = [Finding(FindingKind.RECOMPILATION, 5.0, "step", "t.py:3", "generic", "2 compiles in step"),
             Finding(FindingKind.RECOMPILATION, 4.0, None, "t.py:9", "generic", "2 compiles outside any span"),
             Finding(FindingKind.COMPILE, 3.0, "step", "t.py:3", "compile advice", "1 compile in step"),
             Finding(FindingKind.RECOMPILATION, 2.0, "eval", "t.py:5", "generic", "2 compiles in eval")]
    explanations = [_explanation("step", "B = 8, 16.", "Pad B."), _explanation("step", "S = 2, 3.", "Pad B."),
                    _explanation(NO_SPAN, "A one-off.", "Nothing to fix.", "t.py:9")]
    found = explained_findings(given, explanations)
    assert [(f.detail, f.advice) for f in found] == [
        ("2 compiles in step. B = 8, 16. S = 2, 3.", "Pad B."),
        ("2 compiles outside any span. A one-off.", "Nothing to fix."),
        ("1 compile in step", "compile advice"),  # not a recompilation
        ("2 compiles in eval", "generic")]  # no explanation for its span
    assert [(f.detail, f.advice) for f in given][:2] == [("2 compiles in step", "generic"),
                                                         ("2 compiles outside any span", "generic")]


def test_a_finding_outside_any_span_is_explained_by_its_own_lines_compiles_only():
    """Outside any span the place is the line: generate()'s three reading lines each compiled a graph
    per length, and each finding told all three lines' explanations before."""
    at_call = (LibraryLine("gen.py:394", None, 2, 4.0),)  # the user's generate() call, the library's line behind it
    given = [Finding(FindingKind.RECOMPILATION, 5.0, None, "gen.py:585", "generic", "12 compiles"),
             Finding(FindingKind.RECOMPILATION, 4.0, None, "chat.py:12", "generic", "12 compiles", inside=at_call),
             Finding(FindingKind.RECOMPILATION, 3.0, None, "loop.py:7", "generic", "4 compiles")]
    explanations = [_explanation(NO_SPAN, "Input 15: S = 7, 8.", "Pad S.", "gen.py:585"),
                    _explanation(NO_SPAN, "Input 2: S = 7, 8.", "Pad S.", "gen.py:394"),
                    _explanation(NO_SPAN, "Input 0: B = 8, 16.", "Pad B.", None)]
    found = explained_findings(given, explanations)
    assert [(f.detail, f.advice) for f in found] == [
        ("12 compiles. Input 15: S = 7, 8.", "Pad S."),
        ("12 compiles. Input 2: S = 7, 8.", "Pad S."),
        ("4 compiles. Input 0: B = 8, 16.", "Pad B.")]  # no explanation at its line: those of no known line


def test_a_compile_finding_counts_its_own_lines_compiles_and_graphs():
    """Three lines outside any span compiled 3, 2 and 1 graphs: each finding says its own line's
    counts, not the 6 compiles of every line outside a span."""
    lines = ["gen.py:585"] * 3 + ["gen.py:394"] * 2 + ["loop.py:7"]
    records = [CompileRecord(10.0 * k, 5.0, f"g{k}", None, line) for k, line in enumerate(lines)]
    compiles = summarize_compiles(records, ["w0"] * len(records))
    assert compiles.by_source == {"gen.py:585": 3, "gen.py:394": 2, "loop.py:7": 1}
    assert compiles.graphs_by_source == {"gen.py:585": 3, "gen.py:394": 2, "loop.py:7": 1}
    at_call = (LibraryLine("gen.py:394", None, 2, 20.0),)  # the user's call into the library, the line behind it
    places = (("gen.py:585", 30.0, ()), ("chat.py:12", 20.0, at_call), ("loop.py:7", 10.0, ()))
    costs = [CauseCost(Cause.COMPILE, None, None, line, lost, 1, workers=("w0",), inside=inside)
             for line, lost, inside in places]
    found = {f.source: f for f in rank_findings(costs, compiles, ReadSummary(), {})}
    assert (found["gen.py:585"].kind, found["gen.py:585"].count) == (FindingKind.RECOMPILATION, 3)
    assert "3 compiles of 3 different graphs outside any span" in found["gen.py:585"].detail
    assert "2 compiles of 2 different graphs" in found["chat.py:12"].detail
    assert (found["loop.py:7"].kind, found["loop.py:7"].count) == (FindingKind.COMPILE, 1)
