"""Stage 4, the idle time: every idle microsecond to a cause, and the groupings built on that.

``attribution`` (each gap split into GapPieces by Cause, with its span and stack), ``idle_costs``
(idle by cause, span and Python line), ``call_sites`` (a library's lines grouped at the user's
call), ``steps`` (per step, busy and idle by cause), ``reads`` (the ReadSummary) and
``read_slowdown`` (device time the reads added). Imports ``common``, ``host`` and ``device``.
"""
