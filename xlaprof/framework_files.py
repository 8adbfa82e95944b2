"""Which source files are the framework's rather than the code a user can change.

Contract: ``is_framework_file(path)`` is true for files of torch, torch_xla, functorch and torchgen
(by a path component), of Python's standard library, Python's own pseudo-files (``<frozen ...>``,
``<string>``), and of xlaprof itself: its worker-side modules in ``collectors/`` (the span, sampler
and read-mark code a stack passes through; not the demo workload) and its API facade. The user's own code and third-party libraries (diffusers, transformers) are
not framework: a line there is one the user can act on, at the line itself or at its call. Decided
by the path alone, so it works on a machine other than the worker's. ``is_torch_file(path)``: a
file of torch, torch_xla, functorch or torchgen (not the standard library): a thread blocked there
waits on the runtime's own work (the autograd engine's thread, the device), not on the user's I/O.
``framework_package(path)``: which of those packages ("torch", "torch_xla", ...) the file is in, or None.
``is_library_file(path)``: a file of an installed third-party package (site-packages, dist-packages),
such as diffusers or transformers: the user fixes what happens there at their own call into it.
``is_data_loader_file(path)``: a file of torch's ``torch.utils.data`` (the DataLoader, its fetchers
and collate): a thread running there prepares batches.
"""
from __future__ import annotations

import re
from functools import lru_cache

FRAMEWORK_PACKAGES = frozenset({"torch", "torch_xla", "functorch", "torchgen"})
# xlaprof's own worker-side modules (spans, samplers, read marks, the in-process capture): every module of
# collectors/ but the demo workload's, which plays the user's code.
INSTRUMENTATION_FILES = frozenset({
    "__init__.py", "spans.py", "stack_sampler.py", "stack_runs.py", "metrics_sampler.py", "read_calls.py",
    "inprocess.py", "server.py", "torch_xla_import.py", "worker_protocol.py", "session_writer.py", "capture.py",
    "native_output.py"})
_STDLIB = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\](?!.*site-packages|.*dist-packages)")
_SEPARATOR = re.compile(r"[/\\]")
_LIBRARY = re.compile(r"[/\\](site|dist)-packages[/\\]")


@lru_cache(maxsize=8192)
def is_framework_file(path: str) -> bool:
    if not path or path.startswith("<"):
        return True
    if is_torch_file(path):
        return True
    parts = _SEPARATOR.split(path)
    if len(parts) >= 2 and parts[-2] == "collectors" and parts[-1] in INSTRUMENTATION_FILES:
        return True
    if len(parts) >= 2 and parts[-2] == "xlaprof" and parts[-1] == "__init__.py":  # the API facade
        return True
    return bool(_STDLIB.search(path))


@lru_cache(maxsize=8192)
def is_torch_file(path: str) -> bool:
    return framework_package(path) is not None


def framework_package(path: str) -> str | None:
    """The framework package a file is in ("torch", "torch_xla", ...: its innermost such path
    component), or None."""
    return next((p for p in reversed(_SEPARATOR.split(path)[:-1]) if p in FRAMEWORK_PACKAGES), None)


def is_data_loader_file(path: str) -> bool:
    parts = _SEPARATOR.split(path)
    return any(parts[i:i + 3] == ["torch", "utils", "data"] for i in range(len(parts) - 3))


def is_library_file(path: str) -> bool:
    return bool(_LIBRARY.search(path)) and not is_framework_file(path)
