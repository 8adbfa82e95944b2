"""Python stacks as the session page shows them: a clicked gap's, a finding's, and idle time by line.

Contract:
- ``stack_lines(stack)``: a ``PyStack``'s frames, outermost first, as ``StackLine`` rows: the short
  label (``train.py:57 log_loss``), the full frame, whether it is the user's code (not a framework
  file: ``xlaprof.framework_files``; libraries count as the user's), and whether it is the frame
  the idle time is charged to (``PyStack.source``).
- ``gap_stack(analysis, gaps, gap_id)``: what the panel beside the timeline shows for one gap of
  the gaps table (``GapStack``): its cause, time and place, its whole sampled stack (framework
  frames below the user's line included), the line's text when the file is readable here; a gap
  without a stack says so and names its span's line. ``None`` for a bad id.
- ``finding_stack(finding)``: a finding's stack (outermost frame down to its line) as ``StackLine``s.
- ``finding_library_lines(finding)``: for a finding at the user's call into a library
  (``Finding.inside``), the library lines behind it as ``LibraryLineRow``s, costliest first: the
  short line, its full ``file:line``, its text, how many reads (a read finding) or gap pieces, and
  the idle time; empty for any other finding.
- ``idle_line_rows(analysis)``: the rows of the "Idle time by Python line" table
  (``SessionAnalysis.idle_by_line``, largest first).
"""
from __future__ import annotations

from dataclasses import dataclass

from dashboard.views.axis import AXIS_UNIT_US
from dashboard.views.gap_table import GapColumns, gap_piece
from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.findings.advice import FindingKind
from xlaprof.analysis.findings.findings import Finding
from xlaprof.analysis.host.frames import (
    Frame,
    PyStack,
    line_text,
    parse_stack,
    short_location,
)
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.framework_files import is_framework_file
from xlaprof.units import format_duration


@dataclass(frozen=True)
class StackLine:
    label: str  # "train.py:57 log_loss"
    frame: str  # "/home/me/train.py:57 log_loss"
    user: bool  # outside torch, torch_xla, the standard library and xlaprof's instrumentation
    source: bool  # the frame the idle time is charged to


@dataclass
class GapStack:
    title: str  # "1.2 ms idle on TPU:0: transfer_from_device"
    span: str | None
    source: str | None  # "file:line" the gap is charged to (its stack's line, else its span's)
    code: str | None  # that line's text, when the file is readable here
    lines: list[StackLine]  # outermost first; empty when no stack was sampled


@dataclass(frozen=True)
class LibraryLineRow:
    label: str  # "sched.py:374"
    source: str  # the full "file:line"
    code: str | None  # the line's text, when the file is readable here
    count: str  # "216 reads" (a read finding) or "3 gap pieces"
    lost: str  # its idle time, formatted


def short_frame(frame: str) -> str:
    """"train.py:57 log_loss" from "/home/me/train.py:57 log_loss"."""
    parsed = parse_stack(frame).frames
    return _short(parsed[0]) if parsed else frame


def _short(frame: Frame) -> str:
    return f"{short_location(frame.location)} {frame.function}".rstrip()


def stack_lines(stack: PyStack) -> list[StackLine]:
    source = stack.source_index
    return [StackLine(_short(f), f.label, not is_framework_file(f.file), i == source)
            for i, f in enumerate(stack.frames)]


def gap_stack(analysis: SessionAnalysis, gaps: GapColumns, gap_id: object) -> GapStack | None:
    found = gap_piece(gaps, gap_id)
    if found is None:
        return None
    w, piece = analysis.workers[found[0]], found[1]
    span, source, _ = w.piece_place(piece)
    p = w.pieces
    cause = CAUSES[int(p.cause[piece])].value
    where = w.devices[int(p.device[piece])].name + (f" of {w.worker.label}" if len(analysis.workers) > 1 else "")
    title = f"{format_duration(float(p.dur_us[piece]))} idle on {where}: {cause}"
    stack_id = int(p.stack[piece])
    lines = stack_lines(w.host.stacks.stacks[stack_id]) if stack_id >= 0 else []
    return GapStack(title, span, source, line_text(source), lines)


def finding_stack(finding: Finding) -> list[StackLine]:
    return stack_lines(parse_stack("\n".join(finding.stack))) if finding.stack else []


def finding_library_lines(finding: Finding) -> list[LibraryLineRow]:
    unit = "read" if finding.kind is FindingKind.TRANSFER_FROM_DEVICE else "gap piece"
    return [LibraryLineRow(short_location(line.source), line.source, line.code,
                           f"{line.pieces:,} {unit}{'' if line.pieces == 1 else 's'}", format_duration(line.lost_us))
            for line in finding.inside]


def idle_line_rows(analysis: SessionAnalysis) -> list[dict]:
    return [{"id": i, "source": row.source, "code": row.code or "", "cause": row.cause.value,
             "idle_ms": round(row.idle_us / AXIS_UNIT_US, 4), "pieces": row.pieces,
             "called_from": row.called_from or "", "spans": ", ".join(row.spans)}
            for i, row in enumerate(analysis.idle_by_line)]
