"""Mark the Python call of each blocking read in the profile while a capture records.

A read too short for the stack sampler to see from inside (a 0.1 ms ``.item()`` between busy
lines) would take a neighbouring line's stack. So the reading ops themselves say where they were
called from: ``install()`` (from ``start_server`` and ``profile`` through ``install_for(stack_hz)``,
where the stack rate is not 0; once until ``uninstall()``, which gives the ops their own kernels back) puts a kernel
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
``print(t)``, ``.tolist()``, ``.numpy()``; a copy that stays on the device is not marked). The
bindings of ``READ_BINDINGS`` move device values to the host without the dispatcher (``xm.save``
and other state-dict transfers call ``torch_xla._XLAC._xla_get_cpu_tensors``): ``install()`` puts
the same marking wrapper in their place in ``torch_xla._XLAC``, which torch_xla's Python looks up at
each call.

Every other op that torch_xla runs by its CPU fallback reads its device inputs too (``_weight_norm_interface``
in a weight-normed convolution's forward, ``_ctc_loss``, ``bucketize``: a read of 0.1 ms that the
sampler, at 1 kHz, mostly misses). ``install()`` marks those the same way: the ops of ``aten`` whose
``XLA`` dispatch reaches torch_xla's backend fallback (``fallback_ops``: no kernel of their own at
``XLA`` nor a composite one, and a CPU kernel for the fallback to run). The marking kernel calls the
kernel the dispatcher computed for them, the fallback itself. Ops whose own XLA kernel falls back
inside for some arguments (an upsampling on the CPU device) are not marked: wrapping every op of
torch_xla would cost each call; the stack sampler alone names their reads.
"""
from __future__ import annotations

import functools
import logging
import sys
import threading
import warnings

from collectors import stack_sampler, torch_xla_import
from collectors.stack_runs import KnownStacks, StackReader, frame_stack, hide_innermost
from xlaprof.xspace.vocabulary import PY_READ_STACK_STAT, READ_CALL_EVENT, USER_SPAN_LEVEL

try:
    from collectors._stack_watch import stack_key
except ImportError:  # built without a C compiler: each mark formats its stack anew
    stack_key = None

READ_OPS = ("_local_scalar_dense", "nonzero", "equal", "_unique2", "unique_dim", "unique_consecutive", "masked_select",
            "isin.Tensor_Tensor", "isin.Tensor_Scalar", "isin.Scalar_Tensor", "_to_copy")
# torch_xla's bindings that move device values to the host outside the dispatcher: xm.save,
# xm._maybe_convert_to_cpu (a checkpoint's state dict), mesh_reduce.
READ_BINDINGS = ("_xla_get_cpu_tensors",)


def _reads(name: str, kwargs: dict) -> bool:
    """Whether this call of op ``name`` reads a device value: ``_to_copy`` only to the CPU."""
    if name != "_to_copy":
        return True
    device = kwargs.get("device")
    return device is not None and getattr(device, "type", device) == "cpu"

_DISPATCH_KEY = "XLA"
# An op with a kernel at one of these keys does not reach the backend fallback at ``XLA``.
_OWN_KERNEL_KEYS = (_DISPATCH_KEY, "CompositeImplicitAutograd", "CompositeExplicitAutograd",
                    "CompositeExplicitAutogradNonFunctional")

log = logging.getLogger("xlaprof")
_lock = threading.Lock()
_library = None  # the torch.library registration, kept until uninstall()
_replaced_bindings: dict = {}  # name -> torch_xla's own binding, while a marking wrapper stands in its place


def install() -> None:
    """Put the read-marking kernels in front of ``READ_OPS`` and the ``fallback_ops`` (once per process;
    never raises)."""
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
                    _mark_op(torch, library, profiler, name, functools.partial(_reads, name))
                for name in fallback_ops(torch):
                    if name not in READ_OPS:
                        try:
                            _mark_op(torch, library, profiler, name)
                        except Exception as exc:  # one op's odd schema leaves that op unmarked, not all
                            log.debug("xlaprof: the CPU-fallback op %s is not marked (%s)", name, exc)
            import torch_xla

            bindings = torch_xla._XLAC
            for name in READ_BINDINGS:
                _replaced_bindings[name] = getattr(bindings, name)
                setattr(bindings, name, _marking(_replaced_bindings[name], profiler))
        except Exception as exc:  # instrumentation must never take the worker down: the sampler still names reads
            log.warning("xlaprof: reads are not marked at their calls (%s); the stack sampler alone names them", exc)
            _library = False
            return
        _library = library


def install_for(stack_hz: float) -> None:
    """``install()`` where ``stack_hz`` (the stack rate a capture will sample at) is not 0: at 0 nothing
    is recorded, and a mark would still cost each read its call through Python."""
    if stack_hz > 0:
        install()


def uninstall() -> None:
    """Give the ops their own kernels and torch_xla its bindings back (``bench/bench_read_marks.py``
    compares reads with and without the marks in one process); ``install()`` marks them again."""
    global _library
    with _lock:
        if _library:
            _library._destroy()
            import torch_xla

            for name, binding in _replaced_bindings.items():
                setattr(torch_xla._XLAC, name, binding)
            _replaced_bindings.clear()
        _library = None


def fallback_ops(torch) -> list[str]:
    """The ``aten`` ops (``name.overload``) whose ``XLA`` dispatch reaches torch_xla's CPU fallback."""
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    return sorted(op.removeprefix("aten::") for op in torch._C._dispatch_get_all_op_names()
                  if op.startswith("aten::") and has_kernel(op, "CPU")
                  and not any(has_kernel(op, key) for key in _OWN_KERNEL_KEYS))


def _mark_op(torch, library, profiler, name: str, reads=None) -> None:
    """Put the marking kernel in front of op ``name``'s computed ``XLA`` kernel (its own or the fallback)."""
    xla_kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{name}", _DISPATCH_KEY)
    library.impl(name, _marking(xla_kernel.call_boxed, profiler, reads), _DISPATCH_KEY, with_keyset=True)


def _marking(call, profiler, reads=None):
    """``call`` marked as a read (its caller's stack in a ``READ_CALL_EVENT`` around it) while a capture
    records and stacks are sampled; ``reads(kwargs)``, where given, tells whether this call reads."""
    is_enabled, trace_me = profiler.TraceMe.is_enabled, profiler.TraceMe

    def marked(*args, **kwargs):
        caller = sys._getframe().f_back  # the frame that called the op (kernels run in C++); None from C++ alone
        if (caller is None or not is_enabled(USER_SPAN_LEVEL) or stack_sampler.rate() == 0
                or (reads is not None and not reads(kwargs))):
            return call(*args, **kwargs)
        with trace_me(READ_CALL_EVENT, **{PY_READ_STACK_STAT: caller_text(caller)}):
            return call(*args, **kwargs)

    hide_innermost(marked.__code__)  # a sample taken during the read shows the caller's line
    return marked


_texts = KnownStacks()  # stack_key(frame) -> the text of the stacks the marks wrote


def caller_text(caller) -> str:
    """The stack of the frame ``caller`` (of the calling thread) as the sampler writes it
    (``StackReader``), formatted once per stack: a read in a loop looks it up by ``stack_key``
    (30 frames: 0.5 us, where formatting them takes 13 us)."""
    key = stack_key(caller) if stack_key is not None else None
    text = _texts.get(key) if key is not None else None
    if text is None:
        stack = frame_stack(caller)
        text = StackReader().read(stack).text
        if key is not None:
            _texts.keep(key, stack, text)
    return text
