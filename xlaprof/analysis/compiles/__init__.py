"""Stage 3, the compiles: what compiled, when, and how the graphs of one place differ.

``compiles`` (CompileRecords and the CompileSummary), ``signature_diff`` (what differs between
compiled graphs, in words), ``inner_shapes`` (sizes that vary inside graphs whose inputs do
not) and ``recompiles`` (why a place recompiled: its graphs compared in clusters, in words; each
compile's change from the previous graph of its place). Imports ``common`` and ``host``.
"""
