"""Stage 5, the findings: what cost device time, where, and what to do about it.

``advice`` (FindingKind and the advice fitted to a stack and line), ``findings`` (ranked Findings)
and ``recompiles`` (why a place recompiled: its graphs compared in clusters, in words, and that
explanation written into its recompilation finding; it sits here because it completes findings).
Imports every stage before it.
"""
