"""Oracles from xprof: per-name event counts (the reader's), and per-op device time (the op profile's).

``transfers_in_capture(session)`` is xprof's count of the TransferFromDevice events in a one-worker session.
``xprof_event_counts(path)`` converts a capture with xprof (``xspace_to_tool_data(..., "trace_viewer")``)
and ``xlaprof_event_counts(path)`` reads it with ``xlaprof.reader``; both return a ``Counter`` of
``(plane, line, name, phase)``, where phase is ``"X"`` for complete events and ``"i"`` for instants.

What xprof's conversion does, found on torch_xla 2.9 CPU captures and on TPU-shaped synthetic ones
(xprof 2.x), and how the two sides are made comparable:
- Events of zero duration become instant events (``ph == "i"``), all others complete events
  (``ph == "X"``). Our side counts zero-duration events as ``"i"``, the rest as ``"X"``.
- Host events that its step grouping takes as steps (torch_xla's root events, ``_r=1``, with a
  ``step_num``) are renamed ``"<name> <step_num>"`` (also put in ``args.step_name``); the
  suffix is removed again here.
- A device plane's ``Steps`` line is rebuilt from its own step grouping (one event per group,
  named by group id), so only its event count is compared, under the name ``STEPS_LINE``.
- It adds ``ThreadpoolListener::Region`` complete events, one per ``StartRegion``/``StopRegion``
  pair of instants, which are not in the capture; they are dropped from xprof's side (our side
  must have none for the comparison to hold).
- Metadata events (``ph == "M"``) name processes (planes) and threads (lines); nothing else.
- Aggregated events (``num_occurrences`` instead of an offset) are drawn by xprof as complete
  events at their line's start; our reader skips them. torch_xla captures hold none, so the
  comparison is only meaningful for captures without them.

Per-op device time: ``xprof_hlo_stats(path)`` is xprof's HLO stats tool (TPU captures: one row per
(program id, HLO op) with occurrences, total and self time); it caches its conversion beside the
capture, so the capture is converted from a fresh copy. It has no rows for the CPU device (no
device planes); there ``xprof_op_totals(path)`` sums xprof's trace-viewer events that carry an
``hlo_op`` (the CPU thunks) by op name, xprof's trace viewer dropping their ``program_id``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections import Counter
from contextlib import contextmanager

from xlaprof.session import Session
from xlaprof.xspace import vocabulary

STEPS_LINE = "<steps>"
DERIVED = frozenset({"ThreadpoolListener::Region"})
Key = tuple[str, str, str, str]  # (plane, line, name, phase)


@contextmanager
def _quiet_stderr():
    """xprof's C++ code logs to file descriptor 2 directly; silence it for the call."""
    saved = os.dup(2)
    with open(os.devnull, "wb") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def xprof_trace(path: str) -> dict:
    from xprof.convert import raw_to_tool_data

    with _quiet_stderr():
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "trace_viewer", {})
    return json.loads(data)


def _is_steps_line(plane: str, line: str) -> bool:
    return line == vocabulary.STEPS_LINE and bool(vocabulary.DEVICE_PLANE.match(plane))


def xprof_event_counts(path: str) -> Counter[Key]:
    events = xprof_trace(path)["traceEvents"]
    planes = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    lines = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    counts: Counter[Key] = Counter()
    for e in events:
        phase = e.get("ph")
        if phase not in ("X", "i") or e["name"] in DERIVED:
            continue
        plane, line, name = planes[e["pid"]], lines[(e["pid"], e["tid"])], e["name"]
        args = e.get("args", {})
        if _is_steps_line(plane, line):
            name = STEPS_LINE
        elif "step_num" in args and name == args.get("step_name"):
            name = re.sub(rf" {re.escape(str(args['step_num']))}$", "", name)
        counts[(plane, line, name, phase)] += 1
    return counts


def xlaprof_event_counts(path: str) -> Counter[Key]:
    counts: Counter[Key] = Counter()
    (worker,) = Session.load(str(path)).workers
    for plane in worker.space.planes:
        events = plane.events
        for line_index, name_index, dur in zip(events.line.tolist(), events.name.tolist(), events.dur_us.tolist()):
            line = plane.lines[line_index].name
            name = STEPS_LINE if _is_steps_line(plane.name, line) else plane.names[name_index]
            counts[(plane.name, line, name, "X" if dur > 0 else "i")] += 1
    return counts


def xprof_hlo_stats(path: str) -> dict[tuple[int, str], tuple[int, float, float]]:
    """{(program id, op): (occurrences, total us, self us)} from xprof's hlo_stats tool."""
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory() as fresh:
        copy = shutil.copy(path, fresh)
        with _quiet_stderr():
            data, _ = raw_to_tool_data.xspace_to_tool_data([copy], "hlo_stats", {})
    table = json.loads(data)
    columns = [c["id"] for c in table["cols"]]
    rows = [dict(zip(columns, (cell.get("v") for cell in row["c"]))) for row in table["rows"]]
    return {(int(r["program_id"]), r["hlo_op_name"]): (int(r["occurrences"]), r["total_time"], r["total_self_time"])
            for r in rows}


def xprof_op_totals(path: str) -> Counter[str]:
    """{HLO op name: total us} over xprof's trace-viewer events carrying an ``hlo_op``."""
    with tempfile.TemporaryDirectory() as fresh:
        events = xprof_trace(shutil.copy(path, fresh))["traceEvents"]
    totals: Counter[str] = Counter()
    for e in events:
        if e.get("ph") == "X" and "hlo_op" in e.get("args", {}):
            totals[e["args"]["hlo_op"]] += e["dur"]
    return totals


def transfers_in_capture(session: str) -> int:
    """xprof's count of the TransferFromDevice events in a one-worker session's capture."""
    path = Session.load(session).workers[0].path
    return sum(n for (_, _, name, _), n in xprof_event_counts(path).items() if name in vocabulary.TRANSFER_FROM_DEVICE)

