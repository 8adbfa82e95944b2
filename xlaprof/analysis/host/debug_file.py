"""Read torch_xla's ``PT_XLA_DEBUG_FILE`` (written with ``PT_XLA_DEBUG_LEVEL=2``).

Contract: ``read_debug_file(path)`` returns ``DebugInfo``:
- ``graphs``: ``{graph_hash: GraphDebugInfo}``, each compile's cause and the Python frames that
  triggered it. The graph hash is the one the profiler records on ``XLAGraphExecutor::Compile``,
  which joins the two.
- ``executions``: how many graph executions had each (cause, user frame), e.g. ("most likely
  user code trying to access tensor value before torch_xla.sync", "train.py:57"): the line of an
  ``.item()`` that forced an early execution, even in code without spans. The file covers the
  worker's whole run, not just the capture window, and has no timestamps to narrow it.

A block looks like (Compilation blocks alike)::

    Execution Analysis: Execution Cause
    Execution Analysis:   most likely user code trying to access tensor value before torch_xla.sync
    Execution Analysis: Graph Info:
    Execution Analysis:   Graph Hash: a5428f3b2cdb47454b5a5aaebea116ea
    Execution Analysis: Python Frame Triggered Execution:
    Execution Analysis:   <module> (/tmp/train.py:6)

Text that fits no block is ignored: the format is torch_xla's, not a contract. The file is read
as a capture is: a regular file within the capture size limit (``--max-capture-size``, the same
message), a block at a time, keeping only the blocks' lines; binary data (a NUL byte) is refused.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from xlaprof.errors import XlaprofError

_BLOCK = re.compile(r"^(?P<kind>Compilation|Execution) Analysis: (?P=kind) Cause\n"
                    r"(?P<body>(?:(?P=kind) Analysis: .*\n?)*)", re.MULTILINE)
_FRAME = re.compile(r"^\s*(?P<func>\S+) \((?P<file>.+):(?P<line>\d+)\)\s*$")
_TORCH_XLA_PATH = re.compile(r"/torch_xla/|/torch/")
_BLOCK_LINES = (b"Compilation Analysis: ", b"Execution Analysis: ")  # the only lines the blocks hold
READ_BYTES = 2**20  # the file is read this much at a time
MAX_LINE_BYTES = 2**16  # a longer line is kept cut to this (block lines are a frame or a cause)


def user_frame(frames: list[str]) -> str | None:
    """The innermost frame outside torch/torch_xla, as file:line: the user's line."""
    for frame in frames:
        match = _FRAME.match(frame)
        if match and not _TORCH_XLA_PATH.search(match.group("file")):
            return f"{match.group('file')}:{match.group('line')}"
    return None


@dataclass
class GraphDebugInfo:
    graph_hash: str
    compile_cause: str | None = None
    frames: list[str] = field(default_factory=list)  # "func (file:line)", innermost first

    @property
    def user_frame(self) -> str | None:
        return user_frame(self.frames)


@dataclass
class DebugInfo:
    graphs: dict[str, GraphDebugInfo] = field(default_factory=dict)
    executions: Counter = field(default_factory=Counter)  # (cause, user frame or None) -> count

    def get(self, graph_hash: str | None) -> GraphDebugInfo | None:
        return self.graphs.get(graph_hash) if graph_hash else None


def read_debug_file(path: str) -> DebugInfo:
    return parse_debug_text(_analysis_lines(path))


def _analysis_lines(path: str) -> str:
    """The file's ``... Analysis: ...`` lines (an empty line where others were), read a block at a
    time: the memory is theirs and a block's, whatever else the file holds. Checked as a capture is (a regular file within
    ``--max-capture-size``); ``XlaprofError`` for a file with a NUL byte (not text)."""
    from xlaprof.session import storage
    from xlaprof.session.model import CAPTURE_SIZE_HINT, capture_size_limit

    kept: list[bytes] = []
    carry = b""
    with storage.open_checked(path, capture_size_limit(), CAPTURE_SIZE_HINT) as (handle, _):
        while block := handle.read(READ_BYTES):
            if b"\0" in block:
                raise XlaprofError(f"{path}: binary data, not a PT_XLA_DEBUG_FILE (a text file)")
            lines = (carry + block).split(b"\n")
            carry = lines.pop()
            if len(carry) > MAX_LINE_BYTES:  # no block line is that long: the rest of it is not one
                carry = carry[:MAX_LINE_BYTES]
            for line in lines:
                _keep(kept, line)
    _keep(kept, carry)
    return b"\n".join(kept).decode(errors="replace")


def _keep(kept: list[bytes], line: bytes) -> None:
    """A block's line as it is; any other as one empty line (a block ends there), runs of them as one."""
    if line.startswith(_BLOCK_LINES):
        kept.append(line)
    elif kept and kept[-1]:
        kept.append(b"")


def parse_debug_text(text: str) -> DebugInfo:
    info = DebugInfo()
    for block in _BLOCK.finditer(text):
        kind = block.group("kind")
        cause, graph_hash, frames = _parse_block(block.group("body"), len(kind) + len(" Analysis: "))
        if kind == "Execution":
            info.executions[(cause, user_frame(frames))] += 1
        elif graph_hash and graph_hash not in info.graphs:
            info.graphs[graph_hash] = GraphDebugInfo(graph_hash, cause, frames)
    return info


def _parse_block(body: str, prefix: int) -> tuple[str | None, str | None, list[str]]:
    cause, graph_hash, frames, in_frames = None, None, [], False
    for line in (raw[prefix:].strip() for raw in body.splitlines()):
        if line.startswith("====="):
            break  # the block's end
        if line.startswith("Graph Hash:"):
            graph_hash = line.split(":", 1)[1].strip()
        elif line.startswith("Python Frame"):
            in_frames = True
        elif line.startswith("Graph Info") or line.startswith("-----"):
            in_frames = False
        elif cause is None and not in_frames:
            cause = line
        elif in_frames and _FRAME.match(line):
            frames.append(line)
    return cause, graph_hash, frames
