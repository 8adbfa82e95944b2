"""A PT_XLA_DEBUG_FILE sample in torch_xla 2.9's format (PT_XLA_DEBUG_LEVEL=2): two graphs, one
compiled and run early by a value read at ``/work/train.py:6``, one by the user's sync."""
from __future__ import annotations

SEP = "=" * 80


def debug_block(kind: str, cause: str, graph_hash: str, frames: list[str]) -> str:
    p = f"{kind} Analysis: "
    lines = [f"{p}{SEP}", f"{p}{kind} Cause", f"{p}  {cause}", f"{p}Graph Info: ", f"{p}  Graph Hash: {graph_hash}",
             f"{p}  Number of Graph Inputs: 1", f"{p}Python Frame Triggered Execution: ",
             *[f"{p}  {f}" for f in frames], f"{p}{'-' * 80}", f"{p}{SEP}", ""]
    return "\n".join(lines)


SYNC = "sync (/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)"
READ = "most likely user code trying to access tensor value before torch_xla.sync"
TEXT = "\n".join([
    debug_block("Compilation", READ, "aa11", ["<module> (/work/train.py:6)"]),
    "Computation hash: 5643f88da16ae62aa66ba39f04defcf1\n",
    debug_block("Execution", READ, "aa11", ["<module> (/work/train.py:6)"]),
    debug_block("Compilation", "user torch_xla.sync", "bb22", [SYNC, "step (/work/train.py:7)", "<module> (/work/train.py:9)"]),
    debug_block("Execution", "user torch_xla.sync", "bb22", [SYNC, "step (/work/train.py:7)", "<module> (/work/train.py:9)"]),
    debug_block("Execution", READ, "aa11", ["<module> (/work/train.py:6)"]),
])
