"""Stage 1, the host: what each worker's host did and where in the user's code.

``host_activity`` (reads, transfers, compiles, tracing, as EventSets), ``span_index`` (user spans
and the innermost at any thread and time), ``python_stacks`` (the sampled Python stacks by thread
and time), ``frames`` (a sampled stack, its user line, caller and text) and ``debug_file``
(torch_xla's PT_XLA_DEBUG_FILE). Imports only ``common``.
"""
