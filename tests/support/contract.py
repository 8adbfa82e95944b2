"""The keys of the ``xlaprof analyze --json`` contract, frozen from the report before the
architecture change (issue 9), and the key paths of a report to compare them with.

A path names a key from the top: ``compiles.by_span``; ``[]`` steps into a list's items and ``*``
stands for the keys of a map (spans, workers, counters), which are data, not contract.
"""
from __future__ import annotations

# Dicts whose keys are data (span names, worker labels, counter names).
MAP_KEYS = frozenset({"by_span", "by_graph_hash", "recompiled_spans", "trigger_by_span", "steps", "metrics",
                      "per_worker", "wall_us", "start_unix_ns", "delta", "last", "fallbacks", "facts", "sizes",
                      "buckets", "by_source"})

_CAUSES = ("compile", "host_blocked", "host_tracing", "transfer_from_device", "transfer_to_device", "unattributed")
_STEP = ("busy_us", "name", "start_us", "step", "wall_us")
CONTRACT_KEYS = frozenset(
    ["session", "window_us", "device_busy_us", "device_idle_us", "errors", "event_count", "gaps_total"]
    + ["workers"] + [f"workers[].{k}" for k in ("busy_us", "devices", "host", "idle_by_cause_us", "idle_us",
                                                  "name", "status", "steps", "window_us")]
    + [f"workers[].idle_by_cause_us.{c}" for c in _CAUSES]
    + ["idle_by_cause_us"] + [f"idle_by_cause_us.{c}" for c in _CAUSES]
    + ["compiles"] + [f"compiles.{k}" for k in ("by_graph_hash", "by_graph_hash.*", "by_span", "by_span.*", "count",
                                               "recompiled_spans", "recompiled_spans.*", "total_us",
                                               "trigger_by_span", "trigger_by_span.*", "trigger_by_span.*.cause",
                                               "trigger_by_span.*.count", "trigger_by_span.*.trigger")]
    + ["compile_events"] + [f"compile_events[].{k}" for k in ("cause", "dur_us", "graph_hash", "source", "span",
                                                              "start_us", "trigger", "worker")]
    + ["transfers_from_device"] + [f"transfers_from_device.{k}" for k in ("blocked_us", "by_span", "by_span.*",
                                                                          "count", "total_us")]
    + ["gaps"] + [f"gaps[].{k}" for k in ("at_capture_edge", "cause", "device", "dur_us", "source", "span",
                                          "start_us", "worker")]
    + ["findings"] + [f"findings[].{k}" for k in ("advice", "count", "detail", "kind", "lost_us", "source", "span")]
    + ["execution_causes"] + [f"execution_causes[].{k}" for k in ("cause", "count", "frame", "worker")]
    + ["steps", "steps.*"] + [f"steps.*[].{k}" for k in _STEP + ("idle_by_cause_us",)]
    + [f"steps.*[].idle_by_cause_us.{c}" for c in _CAUSES]
    + ["metrics", "metrics.*"] + [f"metrics.*.{k}" for k in ("delta", "delta.*", "facts", "facts.*", "fallbacks",
                                                             "last", "last.*", "snapshots", "span_us")]
    + ["per_worker", "per_worker.*"] + [f"per_worker.*.{k}" for k in ("busy_us", "idle_by_cause_us",
                                                                       "median_step_us", "steps")]
    + [f"per_worker.*.idle_by_cause_us.{c}" for c in _CAUSES]
    + ["step_alignment"] + [f"step_alignment[].{k}" for k in ("start_unix_ns", "start_unix_ns.*", "step", "wall_us",
                                                              "wall_us.*")]
    + ["stragglers"] + [f"stragglers[].{k}" for k in ("main_cause", "main_cause_us_per_step", "median_step_us",
                                                      "slower_by_us", "worker")]
    # Added by issue 11 (compiled HLO: why it recompiled, device time by graph, op and line).
    + ["workers[].compiles_before_window", "compiles.before_window", "compiles.explained",
       "compile_events[].program_id", "compile_events[].changed"]
    + [f"compiles.explained[].{k}" for k in ("span", "source", "workers", "compiles", "graphs", "compile_us", "kind",
                                             "summary", "advice", "inputs", "sizes", "buckets", "constants",
                                             "instruction_counts", "program_ids")]
    # Added by issue 19 (recompile explanations that survive real runs).
    + [f"compiles.explained[].{k}" for k in ("intermediates", "clusters")]
    + ["graphs"] + [f"graphs[].{k}" for k in ("worker", "program_id", "module", "executions", "total_us", "median_us",
                                              "span", "source", "compiled_in_window", "graph_hash", "ops", "ops_total")]
    + [f"graphs[].ops[].{k}" for k in ("name", "category", "occurrences", "total_us", "self_us", "source")]
    + ["device_time_by_line"] + [f"device_time_by_line[].{k}" for k in ("source", "self_us", "ops")]
    # Added by issue 10 (Python stacks: the exact line).
    + ["gaps[].stack", "findings[].stack", "findings[].code", "findings[].called_from", "notes",
       "transfers_from_device.by_source", "idle_by_line"]
    + [f"idle_by_line[].{k}" for k in ("source", "code", "cause", "idle_us", "pieces", "stack", "called_from",
                                       "spans")]
    # Added in 2.2: one finding per cause and line, its spans as the breakdown.
    + ["findings[].spans", "findings[].workers"] + [f"findings[].spans[].{k}" for k in ("span", "lost_us")]
    # Added in 2.3: why a straggler is slower, the idle cause it has the most more of than the median worker.
    + [f"stragglers[].{k}" for k in ("excess_cause", "excess_cause_us_per_step")])


def key_paths(value, prefix: str = "") -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        is_map = prefix.rsplit(".", 1)[-1].rstrip("[]") in MAP_KEYS
        for key, item in value.items():
            path = f"{prefix}.{'*' if is_map else key}" if prefix else key
            found |= {path} | key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            found |= key_paths(item, prefix + "[]")
    return found
