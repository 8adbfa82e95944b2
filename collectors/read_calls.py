"""Mark the Python call of each blocking read in the profile while a capture records.

A read too short for the stack sampler to see from inside (a 0.1 ms ``.item()`` between busy
lines) would take a neighbouring line's stack. So the reading ops themselves say where they were
called from: ``install()`` (once per process, from ``start_server`` and ``profile``) puts a kernel
in front of each op of ``READ_OPS`` at the ``XLA`` dispatch key: it calls torch_xla's own kernel
(taken before, ``_dispatch_get_computed_kernel_for_dispatch_key``) with the same dispatch key set
and arguments. While a capture records and the stack rate is not 0, it first opens a TraceMe event
``READ_CALL_EVENT`` on the calling thread with the stat ``py_read_stack`` (the caller's Python
stack, as the sampler writes it) and closes it once the op returns: the op's TransferFromDevice
nests in it. Otherwise it only calls the kernel. Autograd, above the XLA key, is untouched, and
nothing reads a tensor value. Reads under ``torch.inference_mode()`` are marked too.

``READ_OPS`` are the ops whose XLA kernel reads a device value: ``_local_scalar_dense`` (``.item()``,
``bool(t)``, ``int(t)``, ``float(t)``, a tensor as an index or a condition), ``nonzero`` (and
``argwhere``, ``torch.where(c)``), ``equal``, the ``unique`` family, ``masked_select`` and ``isin``
(run on the CPU by torch_xla 2.9), and ``_to_copy`` when it copies to the CPU (``.cpu()``,
``print(t)``, ``.tolist()``, ``.numpy()``; a copy that stays on the device is not marked). Reads made
otherwise (another op's CPU fallback) are named by the stack sampler alone.
"""
from __future__ import annotations

import logging
import sys
import threading
import warnings

from collectors import stack_sampler, torch_xla_import
from collectors.stack_runs import StackReader, hide_innermost
from xlaprof.xspace.vocabulary import PY_READ_STACK_STAT, READ_CALL_EVENT, USER_SPAN_LEVEL

READ_OPS = ("_local_scalar_dense", "nonzero", "equal", "_unique2", "unique_dim", "unique_consecutive", "masked_select",
            "isin.Tensor_Tensor", "isin.Tensor_Scalar", "isin.Scalar_Tensor", "_to_copy")


def _reads(name: str, kwargs: dict) -> bool:
    """Whether this call of op ``name`` reads a device value: ``_to_copy`` only to the CPU."""
    if name != "_to_copy":
        return True
    device = kwargs.get("device")
    return device is not None and getattr(device, "type", device) == "cpu"

_DISPATCH_KEY = "XLA"

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
            with warnings.catch_warnings():  # "overriding a previously registered kernel": the point, said once here
                warnings.simplefilter("ignore")
                for name in READ_OPS:
                    xla_kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{name}", _DISPATCH_KEY)
                    library.impl(name, _marking_kernel(name, xla_kernel, profiler), _DISPATCH_KEY, with_keyset=True)
        except Exception as exc:  # instrumentation must never take the worker down: the sampler still names reads
            log.warning("xlaprof: reads are not marked at their calls (%s); the stack sampler alone names them", exc)
            _library = False
            return
        _library = library


def _marking_kernel(name: str, xla_kernel, profiler):
    is_enabled, trace_me, call = profiler.TraceMe.is_enabled, profiler.TraceMe, xla_kernel.call_boxed

    def kernel(keyset, *args, **kwargs):
        caller = sys._getframe().f_back  # the frame that called the op (kernels run in C++); None from C++ alone
        if (caller is None or not is_enabled(USER_SPAN_LEVEL) or stack_sampler.rate() == 0
                or not _reads(name, kwargs)):
            return call(keyset, *args, **kwargs)
        with trace_me(READ_CALL_EVENT, **{PY_READ_STACK_STAT: StackReader().read(caller).text}):
            return call(keyset, *args, **kwargs)

    hide_innermost(kernel.__code__)  # a sample taken during the read shows the caller's line
    return kernel
