"""Mark the Python call of each blocking read in the profile while a capture records.

A read too short for the stack sampler to see from inside (a 0.1 ms ``.item()`` between busy
lines) would take a neighbouring line's stack. So the reading ops themselves say where they were
called from: ``install()`` (once per process, from ``start_server`` and ``profile``) registers, for
XLA tensors, a kernel in front of each op of ``READ_OPS`` at the autograd key. While a capture
records and the stack rate is not 0, the kernel opens a TraceMe event ``READ_CALL_EVENT`` on the
calling thread with the stat ``py_read_stack`` (the caller's Python stack, as the sampler writes
it), runs the op, and closes the event: the op's TransferFromDevice nests in it. Otherwise it only
runs the op. Either way the op runs exactly as it would (below the autograd key, where it goes
next anyway: every op of ``READ_OPS`` returns no gradient), and nothing reads a tensor value.

``READ_OPS`` are the ops whose XLA kernel reads a device value: ``_local_scalar_dense`` (``.item()``,
``bool(t)``, ``int(t)``, ``float(t)``, a tensor as an index or a condition), ``nonzero`` (and
``argwhere``, ``torch.where(c)``), ``equal`` and the ``unique`` family (run on the CPU by torch_xla).
Reads made otherwise (``.cpu()``, ``print(t)``, ``.tolist()``, another op's CPU fallback) and reads
under ``torch.inference_mode()`` (which skips the autograd key) are named by the stack sampler alone.
"""
from __future__ import annotations

import logging
import sys
import threading

from collectors import stack_sampler, torch_xla_import
from collectors.stack_runs import StackReader, hide_innermost
from xlaprof.xspace.vocabulary import PY_READ_STACK_STAT, READ_CALL_EVENT, USER_SPAN_LEVEL

READ_OPS = ("_local_scalar_dense", "nonzero", "equal", "_unique2", "unique_dim", "unique_consecutive")
_DISPATCH_KEY = "AutogradXLA"

log = logging.getLogger("xlaprof")
_lock = threading.Lock()
_library = None  # the torch.library registration, kept for the life of the process


def install() -> None:
    """Put the read-marking kernels in front of ``READ_OPS`` (once per process; never raises)."""
    global _library
    with _lock:
        if _library is not None:
            return
        try:
            import torch

            profiler = torch_xla_import.profiler()
            library = torch.library.Library("aten", "IMPL")
            for name in READ_OPS:
                op = getattr(torch.ops.aten, name).default._op  # the C++ callable: no Python frame above the kernel's
                library.impl(name, _marking_kernel(op, profiler, torch._C._AutoDispatchBelowAutograd), _DISPATCH_KEY)
        except Exception as exc:  # instrumentation must never take the worker down: the sampler still names reads
            log.warning("xlaprof: reads are not marked at their calls (%s); the stack sampler alone names them", exc)
            _library = False
            return
        _library = library


def _marking_kernel(op, profiler, below_autograd):
    is_enabled, trace_me = profiler.TraceMe.is_enabled, profiler.TraceMe

    def kernel(*args, **kwargs):
        caller = sys._getframe().f_back  # the frame that called the op (kernels run in C++); None from C++ alone
        if caller is None or not is_enabled(USER_SPAN_LEVEL) or stack_sampler.rate() == 0:
            with below_autograd():
                return op(*args, **kwargs)
        with trace_me(READ_CALL_EVENT, **{PY_READ_STACK_STAT: StackReader().read(caller).text}):
            with below_autograd():
                return op(*args, **kwargs)

    hide_innermost(kernel.__code__)  # a sample taken during the read shows the caller's line
    return kernel
