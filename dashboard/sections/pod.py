"""The session page's pod section: idle share by worker and step, each step's straggler, workers that behave alike.

Contract: ``section(state, run)`` builds the section (id ``pod-section``) for a session with two or
more workers that ran common steps (``views.pod.pod_grid``; else None): a cause selector
(``pod-cause``: all idle, or one cause present in the steps), who was the slowest worker in how many
steps (``pod-slowest``), the heatmap (``pod-heatmap``: rows workers, columns steps, each step's
straggler marked), the clicked cell's figures (``pod-cell``) and the table of worker groups
(``pod-groups``, a row per group of class ``pod-group``). The grid and the all-idle figure are built
once per cached analysis. ``register(app, state, redraw)`` adds the callbacks: the selector redraws
the heatmap for its cause; a click on a cell (or a straggler mark) shows that worker's step: its
figures in ``pod-cell``, and the timeline zoomed to the step (``redraw(run, (x0_us, x1_us), frame,
workers)``, from the session page, keeping the flame graph's selected frame), in a pod with that
worker's lanes.
The timeline of a pod (more than ``views.pod.TIMELINE_WORKERS`` workers) shows a few workers' lanes
(``timeline_lanes``; a hidden ``SHOWN_WORKERS`` holds them, one a line, ``shown_workers``); a
clicked gap of a hidden worker shows that worker's (``with_gap_worker``).
"""
from __future__ import annotations

from collections.abc import Callable

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import components as ui
from dashboard.figures import STRAGGLER_MARK, color, legend_items, pod_heatmap
from dashboard.state import AppState
from dashboard.views.gap_table import gap_piece
from dashboard.views.pod import (
    ALL_IDLE,
    CellDetail,
    PodGrid,
    cell,
    compact_names,
    heatmap,
    pod_grid,
    slowest_summary,
    timeline_workers,
)
from dashboard.views.timeline import SessionTimeline, only_workers
from xlaprof.analysis.idle.attribution import CAUSES
from xlaprof.analysis.pipeline.worker_comparison import STRAGGLER_RATIO
from xlaprof.errors import XlaprofError
from xlaprof.report.causes import idle_causes
from xlaprof.units import format_duration

GRAPH_CONFIG = {"displaylogo": False, "displayModeBar": False}
PICK_CELL = "Click a cell to see that worker's step on the timeline, with its figures."
TOP_SLOWEST = 5
GONE = "This session is no longer available: reload the page."
SHOWN_WORKERS = "timeline-workers"  # hidden: the workers whose lanes the timeline shows, one a line (None: all)


def _grid(state: AppState, run: str) -> PodGrid | None:
    return state.entry(run).derived("pod-grid", pod_grid)


def timeline_lanes(state: AppState, run: str, requested: object = None) -> tuple[SessionTimeline, str]:
    """The timeline's lanes of the workers it shows (``views.pod.timeline_workers``), and what its
    status adds to say so (empty: every worker shown)."""
    lanes, analysis = state.timeline(run), state.entry(run).analysis
    shown = timeline_workers(analysis, _grid(state, run), requested)
    if shown is None:
        return lanes, ""
    return only_workers(lanes, shown), (f"; lanes of {', '.join(shown)} only ({len(shown)} of "
                                        f"{len(analysis.summaries)} workers): click a cell of the heatmap or a gap "
                                        f"for another worker's")


def shown_workers(state: AppState, run: str) -> html.Div:
    """The hidden holder of the workers the timeline shows, as the page opens."""
    shown = timeline_workers(state.entry(run).analysis, _grid(state, run))
    return html.Div("\n".join(shown) if shown else None, id=SHOWN_WORKERS, hidden=True)


def with_gap_worker(state: AppState, run: str, requested: object, gap_id: object) -> str | None:
    """The workers to show once the gap ``gap_id`` is clicked: as they are, or its worker's lanes
    if they were hidden."""
    analysis = state.entry(run).analysis
    shown = timeline_workers(analysis, _grid(state, run), requested)
    if shown is None:
        return None
    found = gap_piece(state.gaps(run), gap_id)
    label = analysis.workers[found[0]].worker.label if found is not None else None
    return label if label is not None and label not in shown else "\n".join(shown)


def section(state: AppState, run: str) -> html.Div | None:
    grid = _grid(state, run)
    if grid is None:
        return None
    figure = state.entry(run).derived("pod-figure", lambda _: pod_heatmap(heatmap(grid)).to_dict())
    codes = [c.value for c in CAUSES]
    present = [c for c in idle_causes() if grid.idle_us[:, :, codes.index(c)].sum() > 0]
    shown = (f"the first {grid.steps.size} of the {grid.total_steps} steps every worker ran"
             if grid.total_steps > grid.steps.size else f"the {grid.total_steps} steps every worker ran")
    return html.Div([
        html.H2("Workers by step"),
        html.P(f"Each row is a worker, each column one of {shown}; a cell is the share of the worker's device "
               "time in that step that was idle (of every cause, or of the cause picked below). The open diamond "
               "marks each step's slowest worker. Hover a cell for its figures, click it to see the step on the "
               "timeline.", className="muted"),
        html.Div([dcc.RadioItems(id="pod-cause", value=ALL_IDLE, inline=True, className="pod-causes",
                                 options=[{"label": ALL_IDLE, "value": ALL_IDLE}]
                                 + [{"label": c, "value": c} for c in present])], className="toolbar"),
        html.P(_slowest_text(grid), id="pod-slowest"),
        ui.legend([("slowest worker of the step", STRAGGLER_MARK, "the worker whose step took longest"),
                   *legend_items(present)]),
        dcc.Graph(id="pod-heatmap", figure=figure, config=GRAPH_CONFIG),
        html.Div(html.P(PICK_CELL, className="muted"), id="pod-cell", className="detail"),
        html.H3("Workers that behave alike"),
        html.P(f"Grouped by speed, then by the idle cause that dominates their steps: slow is a median step more "
               f"than {STRAGGLER_RATIO:.2f}x the typical worker's ({format_duration(grid.typical_step_us)}: the "
               f"median of the workers' medians), fast less than 1/{STRAGGLER_RATIO:.2f} of it, typical "
               f"between.", className="muted"),
        _groups_table(grid),
    ], className="section", id="pod-section")


def _slowest_text(grid: PodGrid) -> str:
    found = slowest_summary(grid)
    shown = ", ".join(f"{worker} in {n}" for worker, n in found[:TOP_SLOWEST])
    more = f" and {len(found) - TOP_SLOWEST} other workers" if len(found) > TOP_SLOWEST else ""
    return f"Slowest worker of each step: {shown}{more} (of {grid.steps.size} steps)."


def _groups_table(grid: PodGrid) -> html.Table:
    head = html.Tr([html.Th(h) for h in ("Group", "Workers", "Members", "Median step", "Idle share")])
    rows = [html.Tr([html.Td(html.Span(g.title, className="badge", style={"background": color(g.cause)})),
                     html.Td(str(len(g.members))), html.Td(html.Code(compact_names(g.members)), className="pod-members"),
                     html.Td(format_duration(g.median_step_us)), html.Td(f"{100 * g.idle_share:.1f}%")],
                    className="pod-group")
            for g in grid.groups]
    return html.Table([html.Thead(head), html.Tbody(rows)], id="pod-groups", className="table")


def cell_detail(detail: CellDetail | None) -> list:
    if detail is None:
        return [html.P(PICK_CELL, className="muted")]
    slowest = " the slowest worker of this step;" if detail.slowest else ""
    idle = [html.Li([html.Code(c), f" {format_duration(us)}"]) for c, us in detail.idle_by_cause_us.items()]
    return [html.B(f"{detail.worker}, step {detail.step}: {format_duration(detail.wall_us)}", className="pod-cell-title"),
            html.P(f"{detail.vs_median:.2f}x the step's median worker;{slowest} device busy "
                   f"{format_duration(detail.busy_us)}, idle by cause (summed over its devices):"),
            html.Ul(idle) if idle else html.P("never idle in this step.", className="muted")]


def register(app: Dash, state: AppState, redraw: Callable[[str, tuple, object, object], tuple]) -> None:
    @app.callback(Output("pod-heatmap", "figure"), Input("pod-cause", "value"), State("session-run", "data"),
                  prevent_initial_call=True)
    def pick_cause(cause, run):
        try:
            grid = _grid(state, run)
        except XlaprofError:
            return no_update
        if grid is None:
            raise PreventUpdate
        return pod_heatmap(heatmap(grid, cause if isinstance(cause, str) else None))

    @app.callback(Output("pod-cell", "children"), Output("timeline", "figure", allow_duplicate=True),
                  Output("timeline-status", "children", allow_duplicate=True),
                  Output(SHOWN_WORKERS, "children", allow_duplicate=True),
                  Input("pod-heatmap", "clickData"), State("session-run", "data"),
                  State("flame-selection", "children"), State(SHOWN_WORKERS, "children"), prevent_initial_call=True)
    def show_cell(click, run, frame, workers):
        point = (click.get("points") or [None])[0] if isinstance(click, dict) else None
        point = point if isinstance(point, dict) else {}
        try:
            grid = _grid(state, run)
            detail = cell(grid, point.get("y"), point.get("x")) if grid is not None else None
        except XlaprofError:
            return [html.P(GONE)], no_update, no_update, no_update
        if detail is None:
            return cell_detail(None), no_update, no_update, no_update
        if workers:  # a pod whose timeline shows a few workers: now the clicked one's lanes
            workers = detail.worker
        return cell_detail(detail), *redraw(run, (detail.x0_us, detail.x1_us), frame, workers), workers
