"""What to do about a finding, fitted to its case: the advice for each kind, refined by the stack.

Contract: ``advice_for(kind, stack, code, in_data_loader=False, rerun_share=0.0, torch_frame=None)``
returns the advice for a finding of ``kind`` whose Python stack (outermost first, "file:line
function", down to the line) and line text are given, and whose thread ran inside torch's DataLoader
(``in_data_loader``, frames below the line included), or made it in torch's Python below the line
(``torch_frame``, "file:line function"):
- a read in a step closure (``xm.add_step_closure``) already runs after the step is dispatched:
  it still waits for that step; read less often or run the closure asynchronously;
- a read that torch's own Python makes to check a value, where an option turns the check off
  (``TORCH_CHECKS``: ``torch.distributions``' argument validation, ``clip_grad_norm_``'s
  ``error_if_nonfinite``, a ``GradScaler``'s inf check, which bfloat16 does without): that option;
- a table indexed with a device scalar (``x[t]``, ``self.sigmas[i]``) reads the index: it is
  fixed at the call with a CPU index (or a gather on the device), not by reading less often, in a
  library or not (where the line holds no data-dependent op, whose read it would be);
- any other read inside a third-party library (site-packages): a lookup, a data-dependent op, a
  check of its input; its code is not the user's, so it is fixed at the call: the library's option
  that turns the check off, the table it indexes kept on the CPU, a Python number passed;
- a data-dependent op (``nonzero``, ``masked_select``, ``where(mask)``, boolean masks) in the
  user's code needs the values on the host to know its output's shape;
- host Python inside the DataLoader is the batches prepared on the training thread (its dataset's
  ``__getitem__``, the collate: ``num_workers=0``): worker processes and a prefetching loader fix it,
  not ``torch_xla.compile``;
- host-to-device copies where the input pipeline already prefetches (``MpDeviceLoader``), or of
  tensors made on the host inside the step, are constants and scalars, not a data-loader problem.
Otherwise the kind's general advice (``ADVICE``). A read whose early graph's work the step's graph
ran again for at least ``RERUN_ADVICE_SHARE`` of its cost (``rerun_share``) adds that it made the device
run that work twice, and that a read after the step's sync reads a value already computed.
"""
from __future__ import annotations

import re
from enum import Enum

from xlaprof.analysis.idle.attribution import Cause
from xlaprof.framework_files import is_library_file


class FindingKind(str, Enum):
    TRANSFER_FROM_DEVICE = Cause.TRANSFER_FROM_DEVICE.value
    COMPILE = Cause.COMPILE.value
    RECOMPILATION = "recompilation"
    TRANSFER_TO_DEVICE = Cause.TRANSFER_TO_DEVICE.value
    HOST_TRACING = Cause.HOST_TRACING.value
    HOST_BLOCKED = Cause.HOST_BLOCKED.value
    UNATTRIBUTED = Cause.UNATTRIBUTED.value
    CAPTURE_EDGE = "capture_edge"
    CPU_FALLBACK = "cpu_fallback"
    FORCED_EXECUTION = "forced_execution"

    @property
    def cause(self) -> Cause | None:
        """The idle cause this kind's time is charged to (None: a kind that charges no idle time)."""
        if self is FindingKind.RECOMPILATION:
            return Cause.COMPILE
        if self is FindingKind.CAPTURE_EDGE:
            return Cause.UNATTRIBUTED
        try:
            return Cause(self.value)
        except ValueError:  # cpu_fallback, forced_execution
            return None


ADVICE = {
    FindingKind.TRANSFER_FROM_DEVICE: (
        "Reading a tensor's value on the host (.item(), print(t), bool(t), .tolist(), nonzero) "
        "blocks until the device finishes, so the next step cannot be traced ahead. Keep the value "
        "on the device and read it every N steps, or hand it to xm.add_step_closure(fn, (t,)) so it "
        "is read after the step is dispatched."),
    FindingKind.RECOMPILATION: (
        "This span compiled several different graphs: shapes (or Python scalars baked into the "
        "graph) change between steps. Pad inputs to a fixed shape or bucket them to a few sizes, "
        "pass changing scalars as tensors, and run with PT_XLA_DEBUG_LEVEL=2 to see each compile's "
        "cause."),
    FindingKind.COMPILE: (
        "A graph was compiled here. One compile per distinct graph is expected while warming up; "
        "if it recurs in steady state the graph is changing between steps."),
    FindingKind.TRANSFER_TO_DEVICE: (
        "Inputs are copied to the device inside the step. Wrap the loader in "
        "torch_xla.distributed.parallel_loader.MpDeviceLoader to prefetch batches to the device "
        "in the background."),
    FindingKind.HOST_TRACING: (
        "The device waits while the host runs this Python (the model's forward and backward, the "
        "optimizer, the loop's own code) and traces the graph. Move work that does not need the device "
        "out of the step (preprocessing, logging), avoid syncs inside the step so tracing overlaps "
        "execution, or trace once with torch_xla.compile."),
    FindingKind.HOST_BLOCKED: (
        "The training loop waited here, blocked outside torch_xla (a sleep, a queue or DataLoader get, "
        "file or socket I/O, a lock), while the device had nothing to run. Prepare batches ahead of the "
        "step: a torch.utils.data.DataLoader with num_workers > 0, wrapped in torch_xla's "
        "MpDeviceLoader, loads and copies them to the device in the background; move other waits out "
        "of the step loop."),
    FindingKind.UNATTRIBUTED: (
        "The device is idle while the host shows no recorded activity and no sampled Python stack "
        "(a worker started without xlaprof.start_server has no stacks; a thread the sampler missed). "
        "Serve with xlaprof.start_server, or wrap the suspects in xlaprof.trace(...), to see them in "
        "the next capture."),
    FindingKind.CAPTURE_EDGE: (
        "Host events that started before the capture or ended after it (a long compile, say) are "
        "not recorded. Capture a longer window, or start it while the workload is in steady state."),
    FindingKind.CPU_FALLBACK: (
        "These aten ops have no XLA lowering and ran on the CPU, each a device-to-host-to-device "
        "round trip. Replace them with ops torch_xla lowers, or move them out of the step."),
}
ADVICE[FindingKind.FORCED_EXECUTION] = ADVICE[FindingKind.TRANSFER_FROM_DEVICE]

ADVICE_READ_IN_LIBRARY = (
    "This read happens inside a library, where its code needs a device value on the host: a lookup (an "
    "index found with nonzero/item, a CPU table indexed by a device tensor), a data-dependent op "
    "(unique, nonzero), or a check of its input (a NaN or label-range test). It is fixed at the call, "
    "not in the library's code: turn the check off where the library has an option for it (e.g. "
    "torchmetrics' validate_args=False or nan_strategy=\"disable\"), keep what the library indexes "
    "on the CPU (e.g. a scheduler's timesteps as a Python list or CPU tensor), or pass it a Python "
    "number instead of a device tensor.")
ADVICE_DISTRIBUTION_CHECK = (
    "This read is torch.distributions checking its arguments on the host (validate_args, on by default "
    "unless Python runs with -O): each distribution built and each log_prob of a sample reads a device "
    "value to test it. Turn the checks off once with "
    "torch.distributions.Distribution.set_default_validate_args(False), or pass validate_args=False to the "
    "distribution: its math stays on the device and nothing is read.")
ADVICE_CLIP_GRAD_CHECK = (
    "This read is clip_grad_norm_(..., error_if_nonfinite=True) testing the total norm on the host at "
    "every call. Leave error_if_nonfinite False (its default) and test the norm it returns on the device, "
    "or read it every N steps.")
ADVICE_GRAD_SCALER_CHECK = (
    "This read is a GradScaler's step testing whether the gradients hold an inf or a NaN (found_inf), "
    "every step, to skip the optimizer's step if so. Loss scaling is for float16: with bfloat16 autocast "
    "(a TPU's, torch.autocast('xla', dtype=torch.bfloat16)) it is not needed, and without the scaler "
    "nothing is read; with float16 the scaler, and its read a step, stay.")
# Reads that torch's (or torch_xla's) own Python makes to check a value, by what their frame
# ("file:line function") holds, and their fix: torch_xla patches clip_grad_norm_ with its own.
TORCH_CHECKS = (("/torch/distributions/", ADVICE_DISTRIBUTION_CHECK),
                ("clip_grad", ADVICE_CLIP_GRAD_CHECK),
                ("/torch/amp/grad_scaler.py", ADVICE_GRAD_SCALER_CHECK))
ADVICE_CLOSURE = (
    "This read runs in a step closure (xm.add_step_closure): after the step is dispatched, but it "
    "still blocks until the device has finished that step before the next one can be traced. Run the "
    "closure every N steps, or pass run_async=True so the value is read in the background.")
ADVICE_DATA_DEPENDENT = (
    "A data-dependent op (nonzero, masked_select, boolean indexing, unique) must copy its input to "
    "the host to learn its output's shape. Compute the index on the CPU from values you already have, "
    "or use a fixed-shape form (torch.where(mask, a, b), a mask multiplied in) that stays on the device.")
ADVICE_DEVICE_INDEX = (
    "This line indexes a tensor with a scalar that lives on the device (x[t] with t a device tensor, "
    "e.g. a scheduler's sigmas[step_index]): the index must be read to the host first, every call. "
    "Reading less often does not apply: keep the index on the CPU at the call (a Python int, or the "
    "table and its index as CPU tensors), or gather on the device with torch.index_select / "
    "torch.gather so nothing is read.")
ADVICE_LOADER_ON_THIS_THREAD = (
    "The DataLoader prepares each batch on the training thread (its dataset's __getitem__ and the collate "
    "run here, between the steps) while the device waits. Give it worker processes "
    "(torch.utils.data.DataLoader(..., num_workers=N)) and wrap it in torch_xla's MpDeviceLoader, which "
    "prefetches batches to the device in the background, or do the preprocessing once, before training.")
# A read whose early graph the step's graph ran again (``read_reruns``) at this share of its cost or more
# says so in its advice.
RERUN_ADVICE_SHARE = 0.3
ADVICE_RERUN = (
    "This read also made the device run work twice: torch_xla ran the step's graph up to the read on "
    "its own (it computes only the tensor read), and the step's sync ran that work again. Read after "
    "torch_xla.sync(), or in a step closure, and the value is one the step already computed.")
ADVICE_SMALL_TRANSFERS = (
    "These host-to-device copies are tensors created on the host inside the step (torch.tensor(...), "
    "Python scalars turned into tensors), not input batches: create them once on the device outside the "
    "loop, or keep them as device tensors between steps.")

_DATA_DEPENDENT = re.compile(r"\b(nonzero|masked_select|unique|argwhere)\b|\[[^\]]*(==|!=|<|>)[^\]]*\]"
                             r"|\bwhere\((?:[^(),\[\]]|\([^()]*\)|\[[^\]]*\])*\)")  # where(mask): one argument
_CLOSURE = re.compile(r"step_closure")
_INDEXED = re.compile(r"[\w\)\]]\[\s*[A-Za-z_][\w.]*\s*\]")  # x[t], self.sigmas[self.i]: one named index
_EXPLICIT_READ = re.compile(r"\.(item|tolist|numpy|cpu)\(|\b(float|int|bool|print)\(")
_PREFETCHING = re.compile(r"parallel_loader|MpDeviceLoader")
_HOST_TENSOR = re.compile(r"torch\.(tensor|as_tensor|full|ones|zeros)\(|\.to\(")


def advice_for(kind: FindingKind, stack: tuple[str, ...], code: str | None, in_data_loader: bool = False,
               rerun_share: float = 0.0, torch_frame: str | None = None) -> str:
    """The advice for a finding of ``kind`` at ``stack`` (its line's text ``code``); ``rerun_share``:
    for a read, the share of its cost that its early graph's work run again is; ``torch_frame``: the
    frame in torch's Python below the line where it happened (``PyStack.torch_frame``), if any."""
    advice = _advice(kind, stack, code, in_data_loader, torch_frame)
    return f"{advice} {ADVICE_RERUN}" if rerun_share >= RERUN_ADVICE_SHARE else advice


def _advice(kind: FindingKind, stack: tuple[str, ...], code: str | None, in_data_loader: bool,
            torch_frame: str | None) -> str:
    source = stack[-1] if stack else ""
    if kind is FindingKind.HOST_TRACING and in_data_loader:
        return ADVICE_LOADER_ON_THIS_THREAD
    if kind is FindingKind.TRANSFER_FROM_DEVICE:
        if any(_CLOSURE.search(frame) for frame in stack):
            return ADVICE_CLOSURE
        checking = torch_frame and next((advice for path, advice in TORCH_CHECKS
                                         if path in torch_frame.replace("\\", "/")), None)
        if checking:  # torch's own check of a value, with an option that turns it off
            return checking
        data_dependent = bool(code and _DATA_DEPENDENT.search(code))  # the read is that op's, not an index's
        if code and _INDEXED.search(code) and not _EXPLICIT_READ.search(code) and not data_dependent:
            return ADVICE_DEVICE_INDEX
        if is_library_file(source.rpartition(" ")[0] or source):  # its code is not the user's to change
            return ADVICE_READ_IN_LIBRARY
        if data_dependent:
            return ADVICE_DATA_DEPENDENT
    if kind is FindingKind.TRANSFER_TO_DEVICE and (
            any(_PREFETCHING.search(frame) for frame in stack) or (code and _HOST_TENSOR.search(code))):
        return ADVICE_SMALL_TRANSFERS
    return ADVICE[kind]
