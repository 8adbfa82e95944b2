"""A ``TraceModel`` as a Chrome trace (the JSON of chrome://tracing, ``torch.profiler``'s
``export_chrome_trace``, and older trace viewers).

Contract: ``write_chrome(model, out)`` writes one JSON object ``{"traceEvents": [...],
"displayTimeUnit": "ms"}`` to the binary stream ``out``: a process (``pid``) per process
track and a thread (``tid``) per track, named by ``M`` metadata events (``process_name``,
``thread_name``, ``thread_sort_index`` in the model's order); every slice a complete event
(``"ph": "X"``, ``ts`` and ``dur`` in microseconds with 3 decimals) with its ``args`` where it has
some; every instant an ``"i"`` event of thread scope. Events are written in chunks, so memory
stays bounded by the chunk.
"""
from __future__ import annotations

from typing import IO

import numpy as np
import orjson

from xlaprof.export.trace_model import SliceBlock, TraceModel

CHUNK = 1 << 16  # slices formatted at once


def write_chrome(model: TraceModel, out: IO[bytes]) -> None:
    pid_of, tid_of = {}, {}
    metadata = []
    for order, track in enumerate(model.tracks):
        if track.parent is None:
            pid_of[track.uuid] = track.pid
            metadata.append({"ph": "M", "name": "process_name", "pid": track.pid, "args": {"name": track.name}})
            continue
        pid, tid = pid_of[track.parent], order
        tid_of[track.uuid] = (pid, tid)
        metadata += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": track.name}},
                     {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": order}}]
    out.write(b'{"displayTimeUnit":"ms","traceEvents":[\n')
    out.write(b",\n".join(orjson.dumps(m) for m in metadata))
    for block in model.blocks:
        pid, tid = tid_of[block.track]
        for lo in range(0, len(block), CHUNK):
            out.write(b",\n")
            out.write(_slices(block, lo, lo + CHUNK, pid, tid).encode())
    for instant in model.instants:
        pid, tid = tid_of[instant.track]
        out.write(b",\n")
        out.write(orjson.dumps({"ph": "i", "s": "t", "pid": pid, "tid": tid, "ts": round(instant.time_us, 3),
                                "name": instant.name, "args": instant.args}))
    out.write(b"\n]}\n")


def _slices(block: SliceBlock, lo: int, hi: int, pid: int, tid: int) -> str:
    names = [orjson.dumps(n).decode() for n in block.names]
    head = f'{{"ph":"X","pid":{pid},"tid":{tid},"ts":'
    starts = np.round(block.start_us[lo:hi], 3).tolist()
    durs = np.round(block.dur_us[lo:hi], 3).tolist()
    name = block.name[lo:hi].tolist()
    if block.args is None:
        return ",\n".join(f'{head}{s},"dur":{d},"name":{names[k]}}}' for s, d, k in zip(starts, durs, name))
    args = [orjson.dumps(a).decode() for a in block.args[lo:hi]]
    return ",\n".join(f'{head}{s},"dur":{d},"name":{names[k]},"args":{a}}}'
                      for s, d, k, a in zip(starts, durs, name, args))
