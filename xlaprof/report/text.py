"""The terminal report of ``xlaprof analyze``: summary, causes, findings, top gaps, compiles.

Contract: ``render_text(analysis, top=10, source_root=None)`` returns plain text (no colour codes, fits 100
columns) that opens with the session's one-sentence verdict (``verdict.session_verdict``: the idle
share, the biggest cause, its line and the fix), then leads with what to fix: the ranked findings with span, file:line, time lost and
advice (each advice text given once, a later finding with the same advice says "same as #N"; a finding at a call into a library lists the library's lines
inside it), the findings under ``MINOR_SHARE`` of the idle time listed after, one line each; for
several workers a pod section comes first ("tpu-vm-17 is the slowest worker in 80% of steps: host
tracing 2.1x the median worker's"), then only the workers that stand out. Times are formatted by
``xlaprof.units.format_duration``; percentages are of device time. Paths under ``source_root``
are shown relative to it (as in the JSON, which it is rendered from). Causes are named by their
value, each with its meaning (``report.causes``) in the cause table; a line's code is shortened at
a word, never cut inside one; the blocking reads by line add up to the reads counted (the reads no
sampled stack placed are a line of their own).
"""
from __future__ import annotations

import textwrap

import numpy as np

from xlaprof.analysis import SessionAnalysis
from xlaprof.analysis.device.device_profile import NO_SOURCE
from xlaprof.analysis.host.frames import short_location
from xlaprof.analysis.host.span_index import NO_SPAN
from xlaprof.analysis.pipeline.worker_comparison import cause_above_median
from xlaprof.framework_files import is_framework_file
from xlaprof.report.causes import cause_row, finding_cost
from xlaprof.report.json_report import analysis_json
from xlaprof.report.verdict import session_verdict
from xlaprof.units import format_duration as _t

WIDTH = 100
TOP_OPS = 3  # ops shown under each graph
MINOR_SHARE = 0.01  # findings below this share of the idle time are listed in one line each, after the others
OUTLIER_SHARE = 0.10  # a worker whose median step is this far from the typical one is listed
CODE_WIDTH = 48  # characters of a line's code in the idle-by-line table


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f}%" if whole > 0 else "    -"


def rule(title: str) -> str:
    """A section title underlined, with a blank line before it."""
    return f"\n{title}\n{'-' * len(title)}\n"


def render_text(analysis: SessionAnalysis, top: int = 10, source_root: str | None = None) -> str:
    data = analysis_json(analysis, source_root)
    out = [f"xlaprof analysis of {data['session']}\n",
           textwrap.fill(session_verdict(data), WIDTH) + "\n\n"]
    busy, idle = data["device_busy_us"], data["device_idle_us"]
    device_time = busy + idle
    devices = sum(len(w["devices"]) for w in data["workers"])
    out.append(f"window {_t(data['window_us'])} on {len(data['workers'])} worker(s), {devices} device(s); "
               f"{data['event_count']:,} events\n")
    out.append(f"device busy {_t(busy)} ({_pct(busy, device_time).strip()}), "
               f"idle {_t(idle)} ({_pct(idle, device_time).strip()})\n")
    for error in data["errors"]:
        out.append(f"warning: {error}\n")
    for note in data["notes"]:
        out.append(textwrap.fill(f"note: {note}", WIDTH, subsequent_indent="      ") + "\n")

    out += _pod_lines(data)
    out.append(rule("Idle time by cause"))
    for cause, us in sorted(data["idle_by_cause_us"].items(), key=lambda kv: -kv[1]):
        out.append(f"  {cause:<22} {_t(us):>12}  {_pct(us, idle)} of idle  {cause_row(cause).meaning}".rstrip() + "\n")

    out.append(rule("Findings (fix these first)"))
    if not data["findings"]:
        out.append("  none: the device was never idle in the window\n")
    advised: dict[str, int] = {}  # advice -> rank of the first finding it was given for
    shown = data["findings"][:top]
    main = [f for f in shown if f["lost_us"] + f["busy_added_us"] >= MINOR_SHARE * idle or not f["lost_us"]]
    for rank, f in enumerate(main, 1):
        where = f"{f['span'] or NO_SPAN}" + (f" at {f['source']}" if f["source"] else "")
        out.append(f"{rank:>2}. [{f['kind']}] {_cost(f)}: {where}\n")
        out.append(textwrap.fill(f["detail"], WIDTH, initial_indent="     ", subsequent_indent="     ") + "\n")
        if len(f.get("spans") or ()) > 1:  # one line in several spans: its time in each
            out.append(textwrap.fill("in spans: " + ", ".join(f"{s['span'] or NO_SPAN} {_t(s['lost_us'])}"
                                                           for s in f["spans"]),
                                     WIDTH, initial_indent="     ", subsequent_indent="               ") + "\n")
        if f["stack"]:
            out.append(textwrap.fill("stack: " + _path(f["stack"]), WIDTH, initial_indent="     ",
                                     subsequent_indent="            ") + "\n")
        unit = "read(s)" if f["kind"] == "transfer_from_device" else "gap piece(s)"
        for line in f["inside"][:top]:
            code = f" `{shorten(line['code'], CODE_WIDTH)}`" if line["code"] else ""
            out.append(f"     inside: {short_location(line['source'])}{code} ({line['pieces']} {unit}, "
                       f"{_t(line['lost_us'])})\n")
        advice = f"same as #{advised[f['advice']]} above" if f["advice"] in advised else f["advice"]
        advised.setdefault(f["advice"], rank)
        out.append(textwrap.fill("fix: " + advice, WIDTH, initial_indent="     ",
                                 subsequent_indent="          ") + "\n")
    minor = [f for f in shown if f not in main]
    if minor:
        out.append(f"  under {MINOR_SHARE:.0%} of the idle time each:\n")
        for f in minor:
            where = short_location(f["source"]) or f["span"] or NO_SPAN
            out.append("    " + textwrap.shorten(f"[{f['kind']}] {_cost(f)} at {where}", WIDTH - 4) + "\n")

    out += _line_rows(data["idle_by_line"], idle, top)

    out.append(rule(f"Largest idle gaps (of {data['gaps_total']:,})"))
    for g in sorted(data["gaps"], key=lambda g: -g["dur_us"])[:top]:
        out.append(f"  {g['worker']:<18} {g['device']:<7} at {_t(g['start_us']):>11}  {_t(g['dur_us']):>10}  "
                   f"{g['cause']:<21} {g['span'] or '-'}" + (f"  {short_location(g['source'])}" if g["stack"] else "") + "\n")

    out.append(rule("Compilations"))
    out += _compile_lines(data["compiles"], top)
    out += _device_lines(data, top)
    reads = data["transfers_from_device"]
    out.append(rule("Blocking reads (transfer_from_device)"))
    out.append(f"  {reads['count']} read(s), transfer {_t(reads['total_us'])}, host blocked {_t(reads['blocked_us'])}\n")
    out += _counted(reads["by_span"], reads["count"], "in", top, "outside the spans listed")
    if reads["by_source"]:
        out += _counted(reads["by_source"], reads["count"], "at", top, "at a line no sampled stack showed")
    return "".join(out)


def _pod_lines(data: dict) -> list[str]:
    """Several workers: the slowest worker of most steps and the cause it has more of than the
    median worker, then only the workers that stand out (median step or idle share off the
    median worker's by more than ``OUTLIER_SHARE``)."""
    per_worker = data["per_worker"]
    if len(per_worker) < 2:
        return []
    out = [rule(f"Pod of {len(data['workers'])} workers")]
    slowest = data["slowest_in_steps"]
    if slowest:
        worker, n = next(iter(slowest.items()))
        per_step = {label: {c: us / max(row["steps"], 1) for c, us in row["idle_by_cause_us"].items()}
                    for label, row in per_worker.items()}
        cause, excess = cause_above_median(per_step, worker)
        median = per_step[worker][cause] - excess
        ratio = per_step[worker][cause] / median if median > 0 else float("inf")
        times = f"{ratio:.1f}x" if np.isfinite(ratio) else f"{_t(per_step[worker][cause])} per step vs none in"
        out.append(textwrap.fill(
            f"{worker} is the slowest worker in {n / sum(slowest.values()):.0%} of steps: "
            f"{cause.replace('_', ' ')} {times} the median worker's", WIDTH, initial_indent="  ",
            subsequent_indent="  ") + "\n")
    typical = float(np.median([row["median_step_us"] for row in per_worker.values()]))
    outliers = [(label, row) for label, row in per_worker.items()
                if typical > 0 and abs(row["median_step_us"] / typical - 1) > OUTLIER_SHARE]
    for s in data["stragglers"]:
        out.append(f"  straggler: {s['worker']} median step {_t(s['median_step_us'])}, "
                   f"{_t(s['slower_by_us'])} slower; {_t(s['excess_cause_us_per_step'])} more "
                   f"{s['excess_cause'].replace('_', ' ')} per step than the median worker\n")
    for label, row in outliers:
        if all(s["worker"] != label for s in data["stragglers"]):
            out.append(f"  outlier: {label} median step {_t(row['median_step_us'])} (typical {_t(typical)})\n")
    alike = len(per_worker) - len(outliers)
    out.append(f"  {alike} of {len(per_worker)} workers within {OUTLIER_SHARE:.0%} of the median worker's "
               f"step time ({_t(typical)})\n")
    return out


def _counted(counts: dict[str, int], total: int, word: str, top: int, rest: str) -> list[str]:
    """The ``top`` largest counts, then what they leave of ``total``, so the lines add up to it."""
    shown = list(counts.items())[:top]
    out = [f"  {n:>6} {word} {key}\n" for key, n in shown]
    left = total - sum(n for _, n in shown)
    if left > 0:
        out.append(f"  {left:>6} {rest}\n")
    return out


def shorten(code: str, width: int) -> str:
    """``code`` on one line, at most ``width`` characters: cut after a space or a ``.,(`` (never
    inside a name), with an ellipsis."""
    line = " ".join(code.split())
    if len(line) <= width:
        return line
    head = line[:width - 1]
    cut = max(head.rfind(mark) for mark in " .,(")
    return (head[:cut + 1] if cut >= width // 2 else head).rstrip() + "…"


def _cost(finding: dict) -> str:
    return finding_cost(finding["lost_us"], finding["busy_added_us"])


def _line_rows(lines: list[dict], idle: float, top: int) -> list[str]:
    """The Python lines that caused the most idle time (from the sampled stacks)."""
    if not lines:
        return []
    out = [rule("Idle time by Python line")]
    for row in lines[:top]:
        code = f"  {shorten(row['code'], CODE_WIDTH)}" if row["code"] else ""
        out.append(f"  {_t(row['idle_us']):>10} {_pct(row['idle_us'], idle)}  {row['cause']:<21} "
                   f"{short_location(row['source'])}{code}\n")
    return out


def _path(stack: list[str], frames: int = 4) -> str:
    """The innermost ``frames`` of a stack that are not the framework's, "file.py:42 fn > ..."
    (outermost first)."""
    own = [frame for frame in stack if not is_framework_file(frame.rsplit(":", 1)[0])]
    shown = [short_location(frame) for frame in own[-frames:]]
    return ("... > " if len(own) > frames else "") + " > ".join(shown)


def _device_lines(data: dict, top: int) -> list[str]:
    """Device time by graph (with each graph's top ops) and by Python line."""
    graphs = data["graphs"]
    if not graphs:
        return []
    out = [rule("Device time by graph")]
    busy = data["device_busy_us"]
    for g in graphs[:top]:
        where = g["span"] or "(no span)"
        compiled = "; compiled in this window" if g["compiled_in_window"] else ""
        out.append(f"  {g['module'] or 'program'} (program {g['program_id']}) on {g['worker']}, dispatched in {where}\n")
        out.append(f"    {g['executions']} run(s): {_t(g['total_us'])} ({_pct(g['total_us'], busy).strip()} of busy), "
                   f"median {_t(g['median_us'])}{compiled}\n")
        for op in g["ops"][:TOP_OPS]:
            at = f"  {op['source']}" if op["source"] else ""
            out.append(f"      {op['name']:<32} {op['category']:<16} {_t(op['self_us']):>10}{at}\n")
    lines = [line for line in data["device_time_by_line"] if line["source"] != NO_SOURCE]
    if lines:
        out.append(rule("Device time by Python line"))
        for line in lines[:top]:
            out.append(f"  {_t(line['self_us']):>10}  {_pct(line['self_us'], busy)} of busy  {line['source']}\n")
    return out


def _compile_lines(compiles: dict, top: int) -> list[str]:
    before = compiles["before_window"]
    earlier = f", {before} before it" if before is not None else ""
    out = [f"  {compiles['count']} compile(s) in this window{earlier}: {_t(compiles['total_us'])}\n"]
    if compiles["count"] == 0 and before and before > 1:
        out.append(textwrap.fill(
            "graphs compiled before the window are cached and do not show here: capture the first steps "
            "(xlaprof.profile(logdir, steps=range(0, 20))) to see their compiles explained", WIDTH,
            initial_indent="  ", subsequent_indent="  ") + "\n")
    explained = {e["span"]: e for e in compiles["explained"]}
    for span, n in list(compiles["recompiled_spans"].items())[:top]:
        why = explained.get(span)
        out.append(f"  recompiled: {span} compiled {n} different graphs"
                   + ("\n" if why else " (shapes change between steps?)\n"))
        if why:
            out.append(textwrap.fill("why: " + why["summary"], WIDTH, initial_indent="    ",
                                     subsequent_indent="         ") + "\n")
    return out
