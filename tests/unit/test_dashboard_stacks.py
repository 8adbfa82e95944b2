"""The dashboard's Python-stack view-models (flame graph, gaps' stacks, idle by line) on a capture
whose every microsecond is known.

Worker ``w:9012`` (us): window [0, 10000]; TPU:0 busy [0, 1000], [3000, 4000], [5600, 6000],
[7000, 10000], so three gaps. The training thread runs the span ``step`` [500, 7100]
(``/w/train.py:20``) and a compile [1000, 3000]. The sampler saw ``data.py:3 load`` until 1000, then
``MAIN`` (train.py:10 <module> > train.py:20 step) except in ``model.py:5 forward`` [4000, 5600] and
a library's ``sched.py:3 lookup`` [6000, 7000] (above torch's ``nonzero``). So: gap 0 [1000, 3000]
compile at train.py:20, gap 1 [4000, 5600] host tracing in forward, gap 2 [6000, 7000] host tracing
at the library line. Worker ``x:9013`` (second, no sampler):
one gap [0, 50] in its span ``warmup`` (``/w/v.py:7``).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from plotly.utils import PlotlyJSONEncoder

from dashboard.components import TOP_FINDINGS, findings_list
from dashboard.views.flame import (
    HERE,
    OTHER,
    ROOT,
    SEPARATOR,
    clicked_frame,
    frame_filter,
    frame_gaps,
    frame_label,
    idle_flame,
)
from dashboard.views.gap_table import gap_columns, gap_page, gap_piece
from dashboard.views.stacks import (
    LibraryLineRow,
    StackLine,
    finding_library_lines,
    finding_stack,
    gap_stack,
    idle_line_rows,
    short_frame,
)
from dashboard.views.timeline import only_gaps, session_timeline, view
from tests.support.synthetic import XSpaceBuilder, add_stack_samples, write_session
from xlaprof.analysis import analyze
from xlaprof.session import Session
from xlaprof.xspace import vocabulary

MAIN = "/w/train.py:10 <module>\n/w/train.py:20 step"
TORCH = "/venv/lib/python3.11/site-packages/torch/_tensor.py:1020 nonzero"
LIBRARY_LINE = "return (self.timesteps == t).nonzero()"
MODULE, STEP = "/w/train.py:10 <module>", "/w/train.py:20 step"
FORWARD = "/w/model.py:5 forward"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    path = tmp_path_factory.mktemp("lib") / "site-packages" / "fakelib" / "sched.py"
    path.parent.mkdir(parents=True)
    path.write_text(f"class Scheduler:\n    def lookup(self, t):\n        {LIBRARY_LINE}\n")
    return str(path)


def sampled_worker(library: str) -> bytes:
    builder = XSpaceBuilder()
    builder.task_environment(10000.0)
    host = builder.plane(vocabulary.HOST_PLANE)
    python = host.line("python", line_id=1)
    python.event("step", 500, 6600, source="/w/train.py:20")
    python.event("XLAGraphExecutor::Compile", 1000, 2000, graph_hash="ab")
    modules = builder.plane("/device:TPU:0").line("XLA Modules")
    for start, end in ((0, 1000), (3000, 4000), (5600, 6000), (7000, 10000)):
        modules.event("SyncTensorsGraph.1", start, end - start)
    add_stack_samples(host, thread_line_id=1, stacks={
        "load": f"{MODULE}\n/w/data.py:3 load", "main": MAIN, "forward": f"{MAIN}\n{FORWARD}",
        "lib": f"{MAIN}\n{library}:3 lookup\n{TORCH}"},
        runs=[(0, 1000, "load"), (1000, 4000, "main"), (4000, 5600, "forward"), (5600, 6000, "main"),
              (6000, 7000, "lib"), (7000, 10000, "main")])
    return builder.to_bytes()


def plain_worker() -> bytes:
    builder = XSpaceBuilder()
    builder.task_environment(1000.0)
    builder.plane(vocabulary.HOST_PLANE).line("python", line_id=1).event("warmup", 0, 60, source="/w/v.py:7")
    builder.plane("/device:TPU:0").line("XLA Modules").event("SyncTensorsGraph.1", 50, 950)
    return builder.to_bytes()


@pytest.fixture(scope="module")
def analysis(tmp_path_factory, library):
    logdir = tmp_path_factory.mktemp("stacks")
    run = write_session(str(logdir), "run", {"w_9012": sampled_worker(library), "x_9013": plain_worker()})
    result = analyze(Session.load(run))
    assert [w.worker.label for w in result.workers] == ["w:9012", "x:9013"]
    return result


@pytest.fixture(scope="module")
def gaps(analysis):
    return gap_columns(analysis)


def test_the_flame_graph_weighs_each_frame_by_the_idle_time_under_it(analysis, library):
    flame = idle_flame(analysis)
    lookup = f"{library}:3 lookup"
    step = f"{MODULE}{SEPARATOR}{STEP}"
    assert [(n.id, n.parent, n.label, n.value, n.cause, n.pieces) for n in flame.nodes] == [
        (ROOT, "", "all idle time with a Python line", 4_600_000, "host_tracing", 3),
        (MODULE, ROOT, "train.py:10 <module>", 4_600_000, "host_tracing", 3),
        (step, MODULE, "train.py:20 step", 4_600_000, "host_tracing", 3),
        (f"{step}\n(compile at this line)", step, "compile at this line", 2_000_000, "compile", 1),
        (f"{step}\n{FORWARD}", step, "model.py:5 forward", 1_600_000, "host_tracing", 1),
        (f"{step}\n{lookup}", step, "sched.py:3 lookup", 1_000_000, "host_tracing", 1),
    ]
    assert flame.nodes[2].by_cause == {"host_tracing": 2_600_000, "compile": 2_000_000}
    # It opens at the frame all the idle time passes through: train.py:20 step, whose time splits.
    assert flame.top == f"{MODULE}{SEPARATOR}{STEP}"
    assert flame.nodes[4].frame == FORWARD and flame.nodes[3].frame == ""
    # The plain worker's gap [0, 50] has no stack: not drawn, but counted and explained.
    assert flame.unplaced_us == pytest.approx(50.0) and flame.summed == 0
    assert len(flame.notes) == 1 and "x:9013" in flame.notes[0]
    assert "model.py:5 forward" in flame.hover(flame.nodes[4]) and "34.8% of idle" in flame.hover(flame.nodes[4])


def test_past_the_node_cap_the_smaller_frames_are_summed(analysis):
    flame = idle_flame(analysis, max_nodes=4)
    step = f"{MODULE}{SEPARATOR}{STEP}"
    assert [(n.id, n.parent, n.label, n.value) for n in flame.nodes] == [
        (ROOT, "", "all idle time with a Python line", 4_600_000), (MODULE, ROOT, "train.py:10 <module>", 4_600_000),
        (step, MODULE, "train.py:20 step", 4_600_000), (f"{step}\n{OTHER}", step, "3 smaller frames", 4_600_000)]
    assert flame.summed == 3 and flame.nodes[3].pieces == 3 and frame_filter(flame.nodes[3].id) is None
    assert flame.top == step  # not the summed leaf below it
    assert len(idle_flame(analysis, max_nodes=5).nodes) == 5


def test_a_frame_filters_the_gaps_table_and_the_timeline_to_its_gaps(analysis, gaps, library):
    step = f"{MODULE}{SEPARATOR}{STEP}"
    lookup = f"{step}\n{library}:3 lookup"
    for frame, expected in ((MODULE, [0, 1, 2]), (step, [0, 1, 2]), (lookup, [2]), (f"{step}\n{FORWARD}", [1]),
                            (f"{step}\n(compile at this line)", [0]), (f"{step}\n(host_tracing at this line)", [0])):
        page = gap_page(gaps, {"startRow": 0, "endRow": 10, "filterModel": {"stack": frame_filter(frame)}})
        assert [int(row["id"]) for row in page.rows] == expected and page.problem is None, frame
        assert np.flatnonzero(frame_gaps(gaps, frame)).tolist() == expected
    # A frame is matched whole: the prefix of a frame's text is not that frame.
    assert gap_page(gaps, {"filterModel": {"stack": frame_filter(f"{MODULE}{SEPARATOR}/w/train.py:2")}}).matching == 0
    assert frame_gaps(gaps, ROOT) is None and frame_gaps(gaps, None) is None
    timeline = session_timeline(analysis)
    narrowed = only_gaps(timeline, frame_gaps(gaps, lookup))
    tpu = [lane.label for lane in timeline.lanes].index("w:9012 TPU:0")
    idle = lambda lane: sorted(zip(lane.start[lane.gap >= 0].tolist(), lane.gap[lane.gap >= 0].tolist()))  # noqa: E731
    assert idle(timeline.lanes[tpu]) == [(1000.0, 0), (4000.0, 1), (6000.0, 2)]
    assert idle(narrowed.lanes[tpu]) == [(6000.0, 2)]
    assert narrowed.lanes[tpu].start[narrowed.lanes[tpu].gap < 0].size == 4  # the busy items all stay
    assert idle(narrowed.lanes[tpu + 1 + [ln.label for ln in timeline.lanes[tpu + 1:]].index("x:9013 TPU:0")]) == []
    bars = view(narrowed, 5900, 7100)
    assert sum("sched.py:3" in h for h in bars.hover) == 1


def test_gap_rows_name_the_line_of_their_stack_and_carry_the_stack(gaps, library):
    rows = gap_page(gaps, {"startRow": 0, "endRow": 10, "sortModel": [{"colId": "id", "sort": "asc"}]}).rows
    assert [(r["worker"], r["source"], r["span"], r["stack"]) for r in rows] == [
        ("w:9012", "/w/train.py:20", "step", MAIN),
        ("w:9012", "/w/model.py:5", "step", f"{MAIN}\n{FORWARD}"),
        ("w:9012", f"{library}:3", "step", f"{MAIN}\n{library}:3 lookup"),
        ("x:9013", "/w/v.py:7", "warmup", ""),  # no stack: the span's line
    ]
    contains = gap_page(gaps, {"filterModel": {"stack": {"filterType": "text", "type": "contains",
                                                         "filter": "FORWARD"}}})
    assert [r["id"] for r in contains.rows] == ["1"]
    assert gap_page(gaps, {"filterModel": {"stack": {"filterType": "text", "type": "blank"}}}).matching == 1
    assert [gap_piece(gaps, i) for i in (0, 2, 3, "3", 4, -1, "x")] == [(0, 0), (0, 2), (1, 0), (1, 0), None, None,
                                                                       None]


def test_a_clicked_gap_shows_its_whole_stack_and_the_lines_text(analysis, gaps, library):
    stack = gap_stack(analysis, gaps, "2")
    assert stack.title == "1.0 ms idle on TPU:0 of w:9012: host_tracing"
    assert (stack.span, stack.source, stack.code) == ("step", f"{library}:3", LIBRARY_LINE)
    assert stack.lines == [StackLine("train.py:10 <module>", MODULE, True, False),
                           StackLine("train.py:20 step", STEP, True, False),
                           StackLine("sched.py:3 lookup", f"{library}:3 lookup", True, True),
                           StackLine("_tensor.py:1020 nonzero", TORCH, False, False)]
    plain = gap_stack(analysis, gaps, 3)
    assert (plain.lines, plain.source, plain.span, plain.code) == ([], "/w/v.py:7", "warmup", None)
    assert gap_stack(analysis, gaps, 99) is None and gap_stack(analysis, gaps, None) is None


def test_idle_by_line_rows_and_findings_stacks(analysis, library):
    assert idle_line_rows(analysis) == [
        {"id": 0, "source": "/w/train.py:20", "code": "", "cause": "compile", "idle_ms": 2.0, "pieces": 1,
         "called_from": "", "spans": "step"},
        {"id": 1, "source": "/w/model.py:5", "code": "", "cause": "host_tracing", "idle_ms": 1.6, "pieces": 1,
         "called_from": "/w/train.py:20", "spans": "step"},
        {"id": 2, "source": f"{library}:3", "code": LIBRARY_LINE, "cause": "host_tracing", "idle_ms": 1.0,
         "pieces": 1, "called_from": "/w/train.py:20", "spans": "step"},
    ]
    # The library's line is one finding at the user's call into the library, the line inside it.
    finding = next(f for f in analysis.findings if f.inside and f.inside[0].source == f"{library}:3")
    assert finding.source == "/w/train.py:20" and finding.inside[0].code == LIBRARY_LINE
    assert [line.label for line in finding_stack(finding)] == ["train.py:10 <module>", "train.py:20 step"]
    # The dashboard lists that line under the finding: short line, its text, gap pieces and time.
    assert finding_library_lines(finding) == [
        LibraryLineRow("sched.py:3", f"{library}:3", LIBRARY_LINE, "1 gap piece", "1.0 ms")]
    assert all(finding_library_lines(f) == [] for f in analysis.findings if not f.inside)
    drawn = json.dumps(findings_list(analysis.findings).to_plotly_json(), cls=PlotlyJSONEncoder)
    assert drawn.count("finding-inside") == sum(1 for f in analysis.findings[:TOP_FINDINGS] if f.inside) == 1
    assert json.dumps(LIBRARY_LINE)[1:-1] in drawn and "sched.py:3" in drawn


def test_a_click_on_the_icicle_selects_a_frame_and_anything_else_nothing(library):
    step = f"{MODULE}{SEPARATOR}{STEP}"
    # What Plotly sends: the node's id and label, the labels of its parent and of the zoomed-in node.
    root = "all idle time with a Python line"
    click = {"points": [{"id": step, "label": "train.py:20 step", "parent": "train.py:10 <module>", "entry": root}]}
    assert clicked_frame(click, ROOT) == step and clicked_frame(click, MODULE) == step
    # Plotly zooms into a clicked frame: a click on the current top bar zooms out, to its parent.
    assert clicked_frame(click, step) == MODULE
    assert clicked_frame({"points": [{"id": MODULE}]}, MODULE) == ROOT
    assert clicked_frame({"points": [{"id": ROOT}]}, ROOT) == ROOT
    assert clicked_frame({"points": [{"id": ROOT, "label": root}]}, step) == ROOT  # the path bar's root
    for junk in (None, "x", {}, {"points": []}, {"points": ["x"]}, {"points": [{"id": 5}]}):
        assert clicked_frame(junk, step) is None
    assert frame_label(f"{step}\n{library}:3 lookup") == "sched.py:3 lookup"
    assert frame_label(f"{step}\n(compile at this line)") == "train.py:20 step (its own line)"
    assert short_frame("C:\\work\\train.py:5 main") == "train.py:5 main" and short_frame("junk") == "junk"
    assert set(HERE.values()) == {"compile", "transfer_from_device", "transfer_to_device", "host_tracing", "host_blocked",
                                  "unattributed"}
