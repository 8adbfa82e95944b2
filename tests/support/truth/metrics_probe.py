"""torch_xla's counters, read without a device sync (``torch_xla.debug.metrics`` only reads counters).

``snapshot()`` -> a flat dict: ``compiles`` and ``compile_us`` (CompileTime), ``reads`` and ``read_us``
(TransferFromDeviceTime), ``executions`` and ``execute_us`` (ExecuteTime), ``uploads`` (TransferToDeviceTime
samples), ``cached_compiles``, ``dynamo_compile_us`` (TorchDynamo's own time compiling frames into
graphs, ``_compile.compile_inner``, where torch._dynamo was imported: its bytecode tracing, AOT
autograd and the backend's setup; torch_xla's compile of the graph runs at its first execution,
apart, in CompileTime), and ``aten::<op>`` for every CPU-fallback counter. ``delta(a, b)``:
``b - a`` key by key (keys missing from ``a`` count from 0). ``fallback_total(snap)``: all ``aten::``
counts added. ``recent_reads(n)``: the last ``n`` reads' (start, end) in wall-clock seconds, from
TransferFromDeviceTime's samples (each its end and duration).
"""
from __future__ import annotations

import sys

import torch_xla.debug.metrics as met

_METRICS = {"CompileTime": ("compiles", "compile_us"), "TransferFromDeviceTime": ("reads", "read_us"),
            "ExecuteTime": ("executions", "execute_us"), "TransferToDeviceTime": ("uploads", "upload_us")}


def snapshot() -> dict[str, float]:
    snap: dict[str, float] = {}
    for metric, (count_key, total_key) in _METRICS.items():
        data = met.metric_data(metric)
        snap[count_key] = float(data[0]) if data else 0.0
        snap[total_key] = float(data[1]) / 1000.0 if data else 0.0  # ns -> us
    snap["cached_compiles"] = float(met.counter_value("CachedCompile") or 0)
    snap["dynamo_compile_us"] = _dynamo_compile_us()
    for name in met.counter_names():
        if name.startswith("aten::"):
            snap[name] = float(met.counter_value(name) or 0)
    return snap


def recent_reads(n: int) -> list[tuple[float, float]]:
    data = met.metric_data("TransferFromDeviceTime")
    samples = list(data[2]) if data and n > 0 else []
    return [(end_s - duration_ns / 1e9, end_s) for end_s, duration_ns in samples[-n:]]


def _dynamo_compile_us() -> float:
    dynamo = sys.modules.get("torch._dynamo.utils")  # never imported here: a workload without it has none
    times = getattr(dynamo, "compilation_time_metrics", {}).get("_compile.compile_inner", ())
    return 1e6 * float(sum(times))


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value != before.get(key, 0.0)}


def fallback_total(snap: dict[str, float]) -> float:
    return sum(value for key, value in snap.items() if key.startswith("aten::"))
