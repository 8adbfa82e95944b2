"""The session page's compiled-graphs section: where device time goes, by graph, op and line.

Contract: ``section(analysis)`` builds the section (id ``graphs-section``): the graphs table
(``graphs-table``, most device time first; a graph is named by its place and the input sizes that
tell it apart, its XLA name in the tooltip; the dispatching span's own line in the span's tooltip), the ops of the selected graph (``ops-table``; the
largest graph at first), the HLO text of a selected op (``hlo-text``), and device time by
Python line (``lines-table``) where the capture has source lines. ``register(app, state)`` adds
the callbacks: a click on a graph shows its ops, a click on an op its HLO text. The numbers come
from ``dashboard.views.graphs``; callbacks only ask it and draw.
"""
from __future__ import annotations

from dash import Dash, Input, Output, State, dcc, html, no_update

from dashboard.grid import Column, ColumnKind, table_grid
from dashboard.state import AppState
from dashboard.views.graphs import graph_rows, line_rows, op_rows, op_text
from xlaprof.analysis import SessionAnalysis
from xlaprof.errors import XlaprofError

PAGE_SIZE = 10
NUMBER, COUNT, SOURCE = ColumnKind.NUMBER, ColumnKind.COUNT, ColumnKind.SOURCE
GRAPH_COLUMNS = [Column("worker", "Worker", min_px=130), Column("graph", "Graph", grow=3, wrap=True, tooltip="xla"),
                 Column("runs", "Runs", COUNT), Column("total_ms", "Device time (ms)", NUMBER, sort="desc"),
                 Column("median_ms", "Median run (ms)", NUMBER), Column("busy_pct", "% of busy", NUMBER),
                 Column("span", "Dispatched in", grow=2, tooltip="span_source"), Column("compiled", "Compiled")]
OP_COLUMNS = [Column("op", "HLO op", grow=3), Column("category", "Category", grow=2), Column("runs", "Runs", COUNT),
              Column("self_ms", "Self time (ms)", NUMBER, sort="desc"), Column("total_ms", "Total (ms)", NUMBER),
              Column("share_pct", "% of graph", NUMBER), Column("source", "Python line", SOURCE, grow=2)]
LINE_COLUMNS = [Column("source", "Python line", SOURCE, grow=3),
                Column("self_ms", "Device time (ms)", NUMBER, sort="desc"), Column("ops", "HLO ops", COUNT)]
PICK_OP = "Click an op to see its HLO."


def section(analysis: SessionAnalysis) -> html.Div:
    graphs = graph_rows(analysis)
    lines = line_rows(analysis)
    first = op_rows(analysis, 0) if graphs else []
    return html.Div([
        html.H2("Device time by graph"),
        html.P("Each compiled graph that ran: how often, for how long, and who dispatched it. Click a graph "
               "to see its HLO ops by device time; click an op to read its HLO.", className="muted"),
        table_grid("graphs-table", GRAPH_COLUMNS, graphs, page_size=PAGE_SIZE,
                   empty="No compiled graph ran in this capture, or the capture does not say which (no program "
                         "ids on its device events)."),
        html.Div([
            html.H3(_ops_title(graphs, 0), id="ops-title"),
            dcc.Store(id="ops-graph", data=0),
            table_grid("ops-table", OP_COLUMNS, first, page_size=PAGE_SIZE, empty="This graph ran no device op."),
            html.Pre(PICK_OP, id="hlo-text", className="hlo-text"),
        ], id="ops-section") if graphs else None,
        html.Div([html.H3("Device time by Python line"),
                  table_grid("lines-table", LINE_COLUMNS, lines, page_size=PAGE_SIZE, empty="")],
                 id="lines-section") if lines else
        html.P("No Python lines in the compiled HLO: run the worker with XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 to see "
               "device time by line.", className="muted", id="lines-section") if graphs else None,
    ], className="section", id="graphs-section")


def _ops_title(graphs: list[dict], index: int) -> str:
    g = graphs[index]
    return f"Ops of {g['graph']} on {g['worker']}"


def register(app: Dash, state: AppState) -> None:
    @app.callback(Output("ops-table", "rowData"), Output("ops-title", "children"), Output("ops-graph", "data"),
                  Output("hlo-text", "children"), Input("graphs-table", "cellClicked"), State("session-run", "data"),
                  prevent_initial_call=True)
    def show_ops(clicked, run):
        row = clicked.get("rowId") if isinstance(clicked, dict) else None
        try:
            analysis = state.entry(run).analysis
        except XlaprofError:
            return no_update, no_update, no_update, no_update
        ops = op_rows(analysis, row)
        if ops is None:
            return no_update, no_update, no_update, no_update
        return ops, _ops_title(graph_rows(analysis), int(row)), int(row), PICK_OP

    @app.callback(Output("hlo-text", "children", allow_duplicate=True), Input("ops-table", "cellClicked"),
                  State("ops-graph", "data"), State("session-run", "data"), prevent_initial_call=True)
    def show_hlo(clicked, graph, run):
        row = clicked.get("rowId") if isinstance(clicked, dict) else None
        try:
            text = op_text(state.entry(run).analysis, graph, row)
        except XlaprofError:
            return no_update
        return text if text is not None else no_update
