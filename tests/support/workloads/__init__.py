"""Real torch_xla workloads for the integration tests, each started as ``python -m <module>``
with ``--port P --watch-stdin``: it serves the profiler on P, prints ``ready <port>`` once warm,
and runs until its stdin closes (the protocol of ``collectors.demo_worker``)."""
