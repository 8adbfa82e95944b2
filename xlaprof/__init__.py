"""xlaprof: why is my TPU idle, and which line of my code is to blame?

The public API (see ``help(xlaprof.<name>)`` for each):

In the training process (needs torch_xla, the ``worker`` extra):
- ``start_server(port=9012)``: the profiler server that ``xlaprof capture`` pulls from; while a
  capture records, the Python stacks of the process's threads are sampled into it
  (``stack_hz=1000`` samples per second, 0 = off; ``profile`` takes it too).
- ``trace(name, **meta)``: a named span, as ``@xlaprof.trace("fwd")`` or ``with xlaprof.trace("fwd"):``.
- ``step(n, name="train_step")``: a step span, ``with xlaprof.step(n):``.
- ``profile(logdir)``: capture this process in-process, ``with xlaprof.profile("logs") as run:``;
  ``profile(logdir, steps=range(0, 20))`` records those ``step`` numbers only (the first compiles).

Anywhere (no torch needed):
- ``Session.load(path)``: a captured session, read from disk.
- ``analyze(path)``: where the devices were idle and why (a ``SessionAnalysis``; ``path`` a session
  directory, a logdir, a ``.xplane.pb`` file or a ``Session``). Its tables convert to pandas:
  ``result.gaps.to_pandas()``, and ``findings``, ``idle_by_line``, ``steps``, ``graphs``, ``ops``,
  ``compiles``; in Jupyter it shows a short HTML summary.

``import xlaprof`` stays light: each name is imported on first use. The facade is the one place
besides the CLI that reaches both the worker side (``collectors``) and the core.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from xlaprof._version import __version__

__all__ = ["start_server", "trace", "step", "profile", "Session", "analyze", "AnalysisConfig", "__version__"]

if TYPE_CHECKING:
    from collectors import profile, start_server, step, trace
    from xlaprof.analysis import AnalysisConfig, analyze
    from xlaprof.session import Session

_LAZY = {
    "start_server": "collectors", "trace": "collectors", "step": "collectors", "profile": "collectors",
    "Session": "xlaprof.session", "analyze": "xlaprof.analysis", "AnalysisConfig": "xlaprof.analysis",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'xlaprof' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # The API (imported or not yet) and the subpackages, not the facade's own machinery.
    return sorted((set(globals()) | set(__all__)) - {"annotations", "importlib", "TYPE_CHECKING", "_LAZY", "_version"})
