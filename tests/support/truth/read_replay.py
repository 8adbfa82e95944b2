"""An arm without a workload's reads, everything else unchanged: each read answered from a recording.

Where the reads are inside a library (transformers' ``generate()``: its stopping criteria, its masks,
its special-token checks), no argument of the workload takes them out. But a read only hands the host
a value the device computed: the same steps, with each read given the value it returned when the
window ran, make the same Python, trace the same ops and take the same branches, and the device runs
the work the reads cut into pieces as whole graphs at the step's sync. That is the counterfactual of
the reads alone, for any workload whose values repeat (the same inputs, no weights changing).

Contract: ``ReadReplay.install()`` (once per process; after ``collectors.read_calls.install`` when both
are used: it calls the kernel it finds) puts a kernel in front of each reading op (``read_calls.READ_OPS``)
at the ``XLA`` dispatch key. Outside ``recording(i)`` and ``replaying(i)`` it only calls the kernel it found.
Inside ``recording(i)``, it calls it and keeps step ``i``'s result, in order; inside ``replaying(i)``,
it returns step ``i``'s recorded results in the same order without calling it (a result on the device
is uploaded from its recorded copy: an upload, no read), and raises ``ReplayMismatch`` when step ``i``
makes a read the recording does not have, or of another op, or fewer. ``_to_copy`` counts as a read
only when it copies to the CPU. ``ReadReplay.uninstall()`` takes the kernels away again, the ones they
were put in front of back at work: a case run after a replayed one in the same process reads
through no frame of the replay's (its Python kernel would be in every read mark's stack).
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from dataclasses import dataclass

from collectors.read_calls import READ_OPS, _reads

_DISPATCH_KEY = "XLA"


class ReplayMismatch(RuntimeError):
    """A replayed step read what its recording did not."""


@dataclass(frozen=True)
class _OnDevice:  # a result that lives on the device: its copy, uploaded again at replay
    copy: object
    device: object


class ReadReplay:
    _installed: ReadReplay | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._recorded: dict[int, list[tuple[str, object]]] = {}
        self._mode: str | None = None
        self._step: list[tuple[str, object]] = []

    @classmethod
    def install(cls) -> ReadReplay:
        import torch

        with cls._lock:
            if cls._installed is None:
                replay = cls()
                library = torch.library.Library("aten", "IMPL")
                with warnings.catch_warnings():  # "overriding a previously registered kernel": the point
                    warnings.simplefilter("ignore")
                    for name in READ_OPS:
                        found = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{name}", _DISPATCH_KEY)
                        library.impl(name, replay._kernel(name, found), _DISPATCH_KEY, with_keyset=True,
                                     allow_override=True)  # over read_calls' marks, which it calls
                replay._library = library  # kept: the registration lasts as long as the library object
                cls._installed = replay
            return cls._installed

    @classmethod
    def uninstall(cls) -> None:
        with cls._lock:
            if cls._installed is not None:
                cls._installed._library._destroy()
                cls._installed = None

    @contextlib.contextmanager
    def recording(self, step: int):
        self._step, self._mode = self._recorded.setdefault(step, []), "record"
        self._step.clear()
        try:
            yield
        finally:
            self._mode = None

    @contextlib.contextmanager
    def replaying(self, step: int):
        if step not in self._recorded:
            raise ReplayMismatch(f"step {step} was not recorded")
        self._step, self._mode = list(self._recorded[step]), "replay"
        try:
            yield
        finally:
            left, self._mode = len(self._step), None
        if left:
            raise ReplayMismatch(f"step {step} made {left} read(s) fewer than its recording")

    def _kernel(self, name: str, found):
        call = found.call_boxed

        def kernel(keyset, *args, **kwargs):
            mode = self._mode
            if mode is None or not _reads(name, kwargs):
                return call(keyset, *args, **kwargs)
            if mode == "replay":
                if not self._step or self._step[0][0] != name:
                    raise ReplayMismatch(f"a replayed step read with {name}, its recording with "
                                         f"{self._step[0][0] if self._step else 'nothing'}")
                return _given(self._step.pop(0)[1])
            result = call(keyset, *args, **kwargs)
            self._mode = None  # keeping a device result reads it: not one of the step's reads
            try:
                self._step.append((name, _kept(result)))
            finally:
                self._mode = mode
            return result

        return kernel


def _kept(value):
    """A result as the replay keeps it: a tensor copied (to the CPU, remembering its device)."""
    import torch

    if isinstance(value, (tuple, list)):
        return type(value)(_kept(v) for v in value)
    if isinstance(value, torch.Tensor):
        return _OnDevice(value.cpu(), value.device) if value.device.type != "cpu" else value.clone()
    return value


def _given(kept):
    """A kept result as a fresh value: a tensor copied again (to its device: an upload)."""
    import torch

    if isinstance(kept, (tuple, list)):
        return type(kept)(_given(v) for v in kept)
    if isinstance(kept, _OnDevice):
        return kept.copy.to(kept.device)
    return kept.clone() if isinstance(kept, torch.Tensor) else kept
