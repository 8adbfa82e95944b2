"""Stage 7, the comparison of two analysed sessions: ``xlaprof diff`` and its regression gate.

``session_diff`` (``diff_sessions(before, after) -> SessionDiff``), ``finding_match`` (findings
matched: resolved, new, changed, unchanged), ``bootstrap`` (a step-time quantile's change with its
confidence interval) and ``budgets`` (``--fail-if`` budgets checked against a SessionDiff).
Imports every stage before it.
"""
