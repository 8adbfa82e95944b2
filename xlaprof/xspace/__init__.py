"""Reading captures: the XSpace wire schema, a columnar decoder, and the names inside captures.

Modules: ``schema`` (message classes wire-compatible with the profiler's ``xplane.proto``, built by
``protos`` from a declaration in Python, as ``xlaprof.hlo.schema`` is),
``wire`` (numpy decoding of event and stat bytes), ``file_index`` (where planes and lines lie in a
file), ``reader`` (``read_xspace_file``: a file, a piece at a time, into the columnar ``events`` model), ``vocabulary`` (every event and stat name xlaprof looks for),
``metrics`` (the torch_xla metric snapshots a worker records into its capture).
Nothing here needs torch, torch_xla or xprof.
"""
