"""The names torch_xla, PJRT and XLA give their profiler events and stats, grouped by meaning.

Contract: the only place that knows event names. Checked against torch_xla 2.9 captures on
the CPU device (host plane) and the TPU plane layout (``/device:TPU:N`` with an "XLA Modules"
line). Older names are kept beside newer ones where torch_xla renamed an event.
"""
from __future__ import annotations

import re

HOST_PLANE = "/host:CPU"
DEVICE_PLANE = re.compile(r"^/device:(?P<kind>TPU|GPU):(?P<index>\d+)$")

# Device busy time on accelerator planes, best line first.
DEVICE_BUSY_LINES = ("XLA Modules", "XLA Ops")
# Lines of a device plane that are derived summaries, not execution.
DEVICE_DERIVED_LINES = frozenset({
    "Steps", "XLA TraceMe", "Framework Name Scope", "Framework Ops", "Source code",
    "TensorFlow Name Scope", "TensorFlow Ops", "SparseCore Ops", "Launch Stats",
})
STEPS_LINE = "Steps"
XLA_MODULES_LINE = "XLA Modules"  # one event per program execution, named "<module>(<program id>)"
XLA_OPS_LINE = "XLA Ops"  # one event per HLO instruction executed; its metadata carries program_id

# The plane where XLA records every compiled program alive during the capture: one event metadata
# per program (id = program id, name "<module>(<program id>)") carrying the optimized HLO module.
METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"

# On the CPU XLA device the compiled program runs on PJRT CPU client threads of the host plane.
# torch_xla 2.9 names an execution whose thunks run on the intra-op pool "... (wait for completion)"
# (it spans the whole program run); an execution done inline on the calling thread keeps the plain name.
CPU_EXECUTION_EVENTS = ("ThunkExecutor::Execute", "ThunkExecutor::Execute (wait for completion)")
CPU_EXECUTION_FALLBACK_EVENTS = ("PjRtCpuExecutable::ExecuteHelper",)
# One event per PjRt execute of a program on the CPU device (on the dispatching thread): a program run
# is this and every executor event it starts, the nested executors of the intra-op pool's threads too.
CPU_PROGRAM_RUN_EVENTS = ("PjRtCpuExecutable::ExecuteHelper",)
CPU_DEVICE_NAME = "CPU:0"
# Each thunk of a CPU execution is an event named after its HLO instruction, carrying these stats;
# its completion marker is a separate "end: <name>" event without them.
HLO_OP_STAT = "hlo_op"
HLO_MODULE_STAT = "hlo_module"
PROGRAM_ID_STAT = "program_id"
# TPU op metadata stats (xprof's names).
HLO_CATEGORY_STAT = "hlo_category"
# Host events that hand a compiled graph to the device runtime for execution.
DISPATCH = frozenset({
    "PjRtComputationClient::ExecuteComputation", "PjRtComputationClient::ExecuteReplicated",
})
# torch_xla queues each graph for execution here, on the thread that synced; its execution thread
# dispatches the queued graphs in order (one DISPATCH each).
SCHEDULE = frozenset({"ScheduleSyncTensorsGraph"})

TRANSFER_FROM_DEVICE = frozenset({
    "PjRtComputationClient::TransferFromDevice", "PjRtComputationClient::TransferFromServer",
})
TRANSFER_TO_DEVICE = frozenset({
    "PjRtComputationClient::TransferToDevice", "PjRtComputationClient::TransferToServer",
})
# The graph-level compile (carries graph_hash) and the backend compile inside it.
GRAPH_COMPILE = frozenset({"XLAGraphExecutor::Compile"})
BACKEND_COMPILE = frozenset({"PjRtComputationClient::Compile"})
# A blocking read waits here for the device's pending work before its transfer starts.
SYNC_BARRIER = frozenset({"TensorCollectionBarrier"})
# Graph tracing and sync on the host: the lazy tensor machinery working in the user's step.
TRACING = frozenset({
    "StepMarker", "SyncTensorsGraph", "SyncLiveTensorsGraph", "SyncTensorsGraphInternal",
    "CollectSyncTensors", "ExtractIRAndPrepareXlaData_", "RunPostOrder", "SetTensorData",
    "ScheduleSyncTensorsGraph", "TensorCollectionBarrier", "LTC_Tracing", "XLATensor::GetXlaData",
    "BuildInputOutputAliases", "LoweringContext::GetComputation", "XlaGraphExecutor::RunPostOrder",
})

# Other events the runtime records on the threads of Python code (a Python thread's line also holds
# the user's own TraceMe spans: torch_xla's xp.Trace, xp.StepTrace). Runtime events are these, any
# C++ "Class::method" name, and the completion markers "end: <op>" of the CPU device's thunks.
RUNTIME_EVENTS = frozenset({
    "Wait for donation holds", "Wait for usage holds", "D2H Dispatch", "H2D Dispatch",
    "ThunkExecutor::Execute (wait for completion)",
})
_RUNTIME_NAME = re.compile(r"::|^end: ")
# The TraceMe spans torch_xla's own Python opens (torch_xla 2.9: parallel_loader, scan, xla_sharding,
# xla_builder): the library at work, never the user's span, whatever the user's thread was doing.
LIBRARY_TRACE_EVENTS = frozenset({
    "cpu_loader.next", "get_batch_from_cpu_queue", "cpu_data_to_xla_device", "aot_forward", "aot_backward",
    "einsum_linear_forward", "einsum_linear_backward", "jax_to_xla_computation",
})
# XLA's HLO passes are named in lowercase words joined by hyphens ("sharding-removal",
# "while-loop-invariant-code-motion"), MLIR's passes in CamelCase ending "Pass" ("LowerAffinePass"):
# no Python identifier looks like either.
_COMPILER_PASS_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$|^[A-Z][A-Za-z0-9]*Pass$")


def is_compiler_pass(name: str) -> bool:
    """True for a pass of the XLA compiler (the names above, or named as XLA and MLIR name passes)."""
    return name in COMPILER_PASS_EVENTS or bool(_COMPILER_PASS_NAME.match(name))


def is_runtime_event(name: str) -> bool:
    """True for an event torch_xla, PJRT or XLA records; false for a user's TraceMe span."""
    return (name in RUNTIME_EVENTS or name in TRACING or name in SYNC_BARRIER or name == METRICS_EVENT
            or name in LIBRARY_TRACE_EVENTS or bool(_RUNTIME_NAME.search(name)) or is_compiler_pass(name))

# The XLA compiler's outer passes, recorded on the thread that compiles (torch_xla 2.9, CPU): inside
# a compile event normally; alone when the compile began before the capture did.
COMPILER_PASS_EVENTS = frozenset({
    "Codegen", "SplitModule", "RunInvariantCheckers", "HLO passes through layout assignment",
    "after layout assignment", "simplification after layout assignment", "dce", "algsimp", "cse",
    "simplification", "constant_folding",
})

# An explicit sync (torch_xla.sync(), xm.mark_step()): the step's graph, never part of a read call.
STEP_BOUNDARY = frozenset({"StepMarker", "SyncLiveTensorsGraph"})

# The TraceMe level of xlaprof's spans and samples: the profiler records levels <= host_tracer_level.
USER_SPAN_LEVEL = 1

# Stats.
SOURCE_STAT = "source"  # xlaprof.trace / xlaprof.step: "file:line" of the span
STEP_NUM_STAT = "step_num"  # xlaprof.step and torch_xla's StepTrace
STEP_ROOT_STAT = "_r"  # the profiler's step-root marker (1 on a step span)
GRAPH_HASH_STAT = "graph_hash"  # XLAGraphExecutor::Compile
# The reader keeps the stats of host events that carry one of these (see reader).
# Python stack samples (collectors/stack_sampler.py): while a capture records, each sampled Python
# thread has an emitter thread (OS name "py <thread name>") whose TraceMe events are runs of identical
# samples, named after the innermost frame ("file.py:line function"), with these stats.
PY_STACK_STAT = "py_stack"  # frames outermost first, joined by "\n", each "path:line function"
PY_THREAD_STAT = "py_thread"  # the host line id of the sampled thread (its TraceMe thread id)
PY_THREAD_NAME_STAT = "py_thread_name"  # the sampled thread's threading name ("MainThread", ...)
PY_CPU_STAT = "py_cpu_us"  # time the sampled thread was on a CPU or runnable during the run (absent: unknown)
PY_LAG_STAT = "py_lag_us"  # the run began this long before its event opened (absent: 0)
# Time in the run the sampler found the thread blocked in a call of the run's stack (absent: none).
PY_SEEN_BLOCKED_STAT = "py_seen_blocked_us"
# The Python call of a blocking read (collectors/read_calls.py): an event on the reading thread around
# the op that reads (its TransferFromDevice nests in it), with the caller's stack in the sampler's format.
READ_CALL_EVENT = "xlaprof::read"  # "::": a runtime event, never a user span
PY_READ_STACK_STAT = "py_read_stack"
STACK_LINE_PREFIX = "py "  # name of an emitter's line
STACK_SAMPLE_STATS = frozenset({PY_STACK_STAT, PY_THREAD_STAT, PY_THREAD_NAME_STAT, PY_CPU_STAT, PY_LAG_STAT,
                                PY_SEEN_BLOCKED_STAT})
STAT_KEYS_TO_READ = frozenset({SOURCE_STAT, STEP_NUM_STAT, GRAPH_HASH_STAT, PY_STACK_STAT, PY_READ_STACK_STAT})
# Integer stats the reader keeps column-wise for every host event carrying them (see events.IntColumn).
INT_STAT_COLUMNS = frozenset({PROGRAM_ID_STAT})

# The worker-side metrics sampler of collectors/ emits this event with the counters as stats,
# and these facts about the worker beside them.
METRICS_EVENT = "xlaprof.metrics"
FACT_TORCH_XLA_VERSION = "torch_xla_version"
FACT_DEBUG_FILE = "pt_xla_debug_file"  # the worker's PT_XLA_DEBUG_FILE, as an absolute path
FACT_PID = "pid"
FACT_ORDINAL = "ordinal"  # the local process rank under a multi-process launcher
FACT_KEYS = (FACT_TORCH_XLA_VERSION, FACT_DEBUG_FILE, FACT_PID, FACT_ORDINAL)
