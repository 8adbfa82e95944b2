"""Plotly figures drawn from xlaprof's results; they draw, they never compute an analysis.

Contract: each function takes a view-model of ``dashboard.views`` (a timeline view, the overview,
the idle flame graph, a comparison of two sessions, the trend across sessions) and returns a
``plotly.graph_objects.Figure``. Times are shown in milliseconds (``timeline_view.AXIS_UNIT_US``);
one colour per category, the same on every figure (a cause's from ``report.causes``), and a cause
is named by its value. No figure draws a Plotly legend: the pages put an HTML key above each
figure (``components.legend``, fed by ``legend_items``), so the modebar never covers a legend
and no legend pushes a figure's margins into a second layout pass.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.views.axis import AXIS_UNIT_US
from dashboard.views.compare import CompareView
from dashboard.views.flame import ROOT, SEPARATOR, Flame
from dashboard.views.overview import Overview, StepSeries
from dashboard.views.pod import ALL_IDLE, Heatmap
from dashboard.views.timeline import CATEGORIES, TimelineView
from dashboard.views.trend import TrendSeries
from xlaprof.report.causes import CAUSE_ROWS, UNKNOWN, cause_row, idle_causes, titled

# Causes: named by their value, coloured by ``report.causes`` (one row per cause); the other categories here.
CAUSE_COLORS = {cause: row.color for cause, row in CAUSE_ROWS.items()}
COLORS = {"busy": "#2e7d32", "span": "#7aa6b8", **CAUSE_COLORS}
LABELS = {"busy": "device busy", "span": "user span"}
# Highest-priority cause first, as attribution ranks them.
IDLE_CAUSES = idle_causes()
FALLBACK_COLOR = UNKNOWN.color  # a category added to xlaprof that this palette does not know yet
LANE_PX = 30
STEP_BARS_MAX = 100  # steps drawn as bars; more as stacked areas
FLAME_DEPTH = 10  # frames of the icicle shown at once; clicking a frame shows what is below it
FLAME_LEVEL_PX = 34
FLAME_TEXT_PX = 11  # a flame graph frame's name: smaller would be unreadable, so it is hidden instead
SPAN_TEXT_PX = 10  # a span's name on its timeline bar, hidden where it does not fit at this size
POD_ROW_PX, POD_MIN_PX = 13, 240  # the pod heatmap: a row per worker, 64 workers in about 900 px
ALL_IDLE_COLOR = "#b03a2e"  # the pod heatmap's colour of all idle time (a cause's: its own)
STRAGGLER_MARK = "#111111"
SIDES = {"before": "#7f8c8d", "after": "#2e86c1"}  # the two sessions of a comparison


def color(category: str) -> str:
    return COLORS.get(category, FALLBACK_COLOR)


def label(category: str) -> str:
    """A cause's name is its value; busy time and spans have their own."""
    return LABELS.get(category, category)


def legend_items(categories) -> list[tuple[str, str, str]]:
    """(name, colour, hover text) of each category, for ``components.legend``."""
    return [(label(c), color(c), titled(c) if c in CAUSE_ROWS else label(c)) for c in categories]


def side_items(before: str, after: str) -> list[tuple[str, str, str]]:
    """The two sessions of a comparison, for ``components.legend``."""
    return [(before, SIDES["before"], "the session before the change"),
            (after, SIDES["after"], "the session after the change")]


def trend_items() -> list[tuple[str, str, str]]:
    """The trend chart's two series, for ``components.legend``."""
    return [("device idle share (%)", color("unattributed"), "left axis"),
            ("median step (ms)", color("busy"), "right axis")]


def _layout(fig: go.Figure, height: int, **extra) -> go.Figure:
    base = dict(height=height, margin=dict(l=10, r=10, t=30, b=40), template="plotly_white", showlegend=False)
    fig.update_layout(**{**base, **extra})
    return fig


def timeline_figure(view: TimelineView) -> go.Figure:
    fig = go.Figure()
    labels = np.array(view.labels, dtype=object)
    hover = np.array(view.hover, dtype=object)
    text = np.array(view.text, dtype=object) if view.text else np.full(len(view), "", dtype=object)
    for code, category in enumerate(CATEGORIES):
        pick = np.flatnonzero(view.category == code)
        if not pick.size:
            continue
        # A span's name on its bar, left-aligned, where it fits (uniformtext hides what would not).
        named = dict(text=text[pick], textposition="inside", insidetextanchor="start",
                     textfont=dict(size=SPAN_TEXT_PX, color="#1f2328"), constraintext="inside") \
            if text[pick].any() else {}
        fig.add_trace(go.Bar(
            orientation="h", y=labels[view.lane[pick]], base=view.start[pick] / AXIS_UNIT_US,
            x=(view.end[pick] - view.start[pick]) / AXIS_UNIT_US, name=label(category),
            marker=dict(color=color(category), opacity=view.opacity[pick], line=dict(width=0)),
            hovertext=hover[pick], hoverinfo="text", width=0.8, **named))
    fig.update_xaxes(range=[view.x0 / AXIS_UNIT_US, view.x1 / AXIS_UNIT_US], title_text="time (ms)",
                     showspikes=True, spikemode="across", spikethickness=1)
    # Lanes top to bottom in the timeline's order, all of them even where nothing is visible.
    fig.update_yaxes(categoryorder="array", categoryarray=view.labels[::-1], fixedrange=True,
                     range=[-0.5, len(view.labels) - 0.5])
    return _layout(fig, 80 + LANE_PX * max(len(view.labels), 1), barmode="overlay", dragmode="zoom",
                   hovermode="closest", bargap=0.1, margin=dict(l=10, r=10, t=30, b=40),
                   uniformtext=dict(mode="hide", minsize=SPAN_TEXT_PX))


def idle_donut(ov: Overview) -> go.Figure:
    causes = [c for c in IDLE_CAUSES if ov.idle_by_cause_us.get(c, 0.0) > 0]
    fig = go.Figure(go.Pie(
        labels=[label(c) for c in causes], values=[ov.idle_by_cause_us[c] / AXIS_UNIT_US for c in causes],
        hole=0.55, marker=dict(colors=[color(c) for c in causes]), sort=False, textinfo="none",
        customdata=[cause_row(c).meaning for c in causes],
        hovertemplate="%{label}: %{value:,.1f} ms (%{percent})<br>%{customdata}<extra></extra>"))
    return _layout(fig, 200, margin=dict(l=0, r=0, t=0, b=0))


def _stacked(fig: go.Figure, x, busy, idle: dict[str, np.ndarray], horizontal: bool) -> None:
    for category, values in [("busy", busy)] + [(c, idle[c]) for c in IDLE_CAUSES]:
        values = np.asarray(values, dtype=float) / AXIS_UNIT_US
        if not values.any():
            continue
        xy = dict(x=values, y=x) if horizontal else dict(x=x, y=values)
        fig.add_trace(go.Bar(name=label(category), marker_color=color(category),
                             orientation="h" if horizontal else "v", **xy,
                             hovertemplate=f"{label(category)}: %{{{'x' if horizontal else 'y'}:.2f}} ms"
                                           "<extra>%{" + ("y" if horizontal else "x") + "}</extra>"))


def step_chart(series: StepSeries) -> go.Figure:
    """Stacked bars per step; past ``STEP_BARS_MAX`` steps, stacked areas (one path per category,
    where bars would cost the browser one shape per step and category)."""
    fig = go.Figure()
    if series.step.size <= STEP_BARS_MAX:
        _stacked(fig, series.step, series.busy_us, series.idle_us, horizontal=False)
        layout = dict(barmode="stack")
    else:
        for category, values in [("busy", series.busy_us)] + [(c, series.idle_us[c]) for c in IDLE_CAUSES]:
            values = np.asarray(values, dtype=float) / AXIS_UNIT_US
            if values.any():
                fig.add_trace(go.Scatter(x=series.step, y=values, name=label(category), stackgroup="steps",
                                         mode="lines", line=dict(width=0, color=color(category)),
                                         hovertemplate=f"{label(category)}: %{{y:.2f}} ms<extra>step %{{x}}</extra>"))
        layout = dict(hovermode="x unified")
    unit = "bar" if series.step.size <= STEP_BARS_MAX else "point"
    fig.update_xaxes(title_text="step" if series.group == 1 else
                     f"step (each {unit}: the mean step of {series.group} consecutive steps)")
    fig.update_yaxes(title_text="device time (ms, summed over devices)")
    return _layout(fig, 320, **layout)


def worker_chart(rows: list[dict]) -> go.Figure:
    fig = go.Figure()
    workers = [r["worker"] for r in rows]
    idle = {c: np.array([r[f"{c}_ms"] for r in rows]) * AXIS_UNIT_US for c in IDLE_CAUSES}
    _stacked(fig, workers, np.array([r["busy_ms"] for r in rows]) * AXIS_UNIT_US, idle, horizontal=True)
    fig.update_xaxes(title_text="device time (ms, summed over the worker's devices)")
    return _layout(fig, 90 + 40 * len(rows), barmode="stack")


def pod_heatmap(view: Heatmap) -> go.Figure:
    """Idle share per worker (rows, top down) and aligned step (columns), from white to the cause's
    colour, each step's straggler marked with an open diamond."""
    top = ALL_IDLE_COLOR if view.title == ALL_IDLE else color(view.title)
    fig = go.Figure(go.Heatmap(x=view.x, y=view.y, z=view.z, customdata=view.wall_ms, hovertemplate=view.hover,
                               colorscale=[[0.0, "#ffffff"], [1.0, top]], zmin=0,
                               zmax=max(1.0, max((max(row) for row in view.z), default=1.0)), xgap=1, ygap=1,
                               colorbar=dict(title=dict(text="idle %", side="right"), thickness=12, len=1.0)))
    fig.add_trace(go.Scatter(x=view.straggler_x, y=view.straggler_y, mode="markers", text=view.straggler_hover,
                             hovertemplate="%{text}<extra></extra>", name="slowest worker",
                             marker=dict(symbol="diamond-open", size=7, color=STRAGGLER_MARK, line=dict(width=1.5))))
    fig.update_xaxes(title_text="step", showgrid=False)
    fig.update_yaxes(autorange="reversed", showgrid=False, tickfont=dict(size=10), type="category")
    return _layout(fig, max(POD_MIN_PX, 80 + POD_ROW_PX * len(view.y)), margin=dict(l=10, r=10, t=10, b=40))


def flame_figure(flame: Flame) -> go.Figure:
    """The idle flame graph as an icicle, the outermost frames at the top, each frame as wide as the
    idle time under it and coloured by the cause of most of it, opened at ``Flame.top`` (the path bar
    above leads back to the root); clicking a frame zooms into it."""
    nodes = flame.nodes
    fig = go.Figure(go.Icicle(
        ids=[n.id for n in nodes], parents=[n.parent for n in nodes], labels=[n.label for n in nodes],
        values=[n.value for n in nodes], branchvalues="total", level=flame.top, maxdepth=FLAME_DEPTH,
        marker=dict(colors=[color(n.cause) for n in nodes], line=dict(width=1, color="#ffffff")),
        hovertext=[flame.hover(n) for n in nodes], hoverinfo="text", textinfo="label",
        textfont=dict(size=FLAME_TEXT_PX),
        tiling=dict(orientation="v"), pathbar=dict(visible=True, side="top"), sort=False, leaf=dict(opacity=1.0)))
    top = flame.top.count(SEPARATOR) + 1 if flame.top != ROOT else 0
    depth = max((n.id.count(SEPARATOR) + 2 - top for n in nodes if n.id != ROOT), default=1)
    # A frame too narrow for its name at a readable size shows none (its hover still has it).
    return _layout(fig, 60 + FLAME_LEVEL_PX * min(depth, FLAME_DEPTH), margin=dict(l=0, r=0, t=30, b=0),
                   uniformtext=dict(mode="hide", minsize=FLAME_TEXT_PX))


def cause_bars(view: CompareView) -> go.Figure:
    """Busy and idle time by cause of the two sessions, side by side, per step (``view.unit``)."""
    fig = go.Figure()
    names = [label(c) for c in view.causes]
    for side, values in (("before", view.before_ms), ("after", view.after_ms)):
        fig.add_trace(go.Bar(x=names, y=values, name=side, marker_color=SIDES[side],
                             hovertemplate=f"{side}: %{{y:.3f}} ms {view.unit}<extra>%{{x}}</extra>"))
    fig.update_yaxes(title_text=f"device time {view.unit} (ms)")
    return _layout(fig, 340, barmode="group")


def step_distributions(view: CompareView) -> go.Figure:
    """The two sessions' step times as overlaid histograms on shared bins, each normalized to its
    share of steps (a window of 39 steps is as visible as one of 2,836)."""
    fig = go.Figure()
    edges = view.bin_edges_ms
    if edges.size:
        size = float(edges[1] - edges[0])  # equal bins (views.compare.step_bins)
        bins = dict(start=float(edges[0]), end=float(edges[-1]), size=size)
        for side, values in (("before", view.step_before_ms), ("after", view.step_after_ms)):
            # far outliers are drawn in the last bin (its hover says from where)
            shown = np.minimum(values, edges[-1] - size / 2) if view.overflow_ms is not None else values
            fig.add_trace(go.Histogram(x=shown, name=f"{side} ({values.size} steps)", xbins=bins, autobinx=False,
                                       histnorm="percent", marker_color=SIDES[side], opacity=0.6,
                                       hovertemplate=f"{side}: %{{y:.1f}}% of its {values.size:,} steps at "
                                                     f"%{{x}} ms<extra></extra>"))
    fig.update_xaxes(title_text="step time (ms)")
    fig.update_yaxes(title_text="share of steps (%)")
    return _layout(fig, 320, barmode="overlay")


def trend_chart(series: TrendSeries) -> go.Figure:
    """Idle share and median step time across the sessions of a logdir, oldest first."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=series.date, y=series.idle_pct, name="device idle share (%)", mode="lines+markers",
                             marker_color=color("unattributed"), text=series.run,
                             hovertemplate="%{text}: %{y:.1f}% idle<extra></extra>"))
    fig.add_trace(go.Scatter(x=series.date, y=series.step_median_ms, name="median step (ms)", mode="lines+markers",
                             marker_color=color("busy"), text=series.run, yaxis="y2",
                             hovertemplate="%{text}: median step %{y:.2f} ms<extra></extra>"))
    fig.update_xaxes(title_text="session")
    # uirevision: the sessions page redraws the trend every few seconds; a zoom survives that
    return _layout(fig, 300, uirevision="trend", yaxis=dict(title_text="idle share (%)", rangemode="tozero"),
                   # its own round ticks (Plotly syncs an overlaying axis' ticks to the left one's grid: 0.519, 1.037)
                   yaxis2=dict(title_text="median step (ms)", overlaying="y", side="right", rangemode="tozero",
                               tickmode="auto", showgrid=False))
