"""Stage 2, the device: when each device executed, and what.

``device_timeline`` (busy intervals from TPU/GPU planes or the CPU device's executions),
``programs`` (each execution's program and dispatching span, each compile's program) and
``device_profile`` (device time by graph, HLO instruction and Python line, on demand).
Imports ``common`` and ``host``.
"""
