"""Stage 3, the compiles: what compiled, when, and how the graphs of one place differ.

``compiles`` (CompileRecords and the CompileSummary), ``signature_diff`` (what differs between
compiled graphs, in words) and ``inner_shapes`` (sizes that vary inside graphs whose inputs do
not). The explanation of a place's recompiles, which completes its finding, is
``findings.recompiles``. Imports ``common`` and ``host``.
"""
