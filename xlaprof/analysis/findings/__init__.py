"""Stage 5, the findings: what cost device time, where, and what to do about it.

``advice`` (FindingKind and the advice fitted to a stack and line), ``findings`` (ranked Findings)
and ``recompile_findings`` (new recompilation findings completed with ``compiles.recompiles``'
explanation of their place).
Imports every stage before it.
"""
