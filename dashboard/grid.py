"""The dashboard's tables, built one way: column specs in, a configured AG Grid (dash-ag-grid) out.

Contract:
- ``Column`` describes one column: the row key it shows, its title, its ``ColumnKind`` (text;
  ``NUMBER``: a time in ms or a share in %, shown with thousands separators and one decimal,
  ``2,567.1``, the format of the cards' ``units.format_ms``; ``COUNT``: a whole number with
  thousands separators; ``ID``: a number shown as it is; ``SOURCE``: a ``path/file.py:57`` value
  shown as ``file.py:57`` with the full path in a tooltip on hover), whether long text wraps (at
  spaces only, never inside a word), an initial sort, colours per value, a tooltip per row (the
  row key ``tooltip`` names; by default a text cell's own text, so cut text can be read), and
  whether it is hidden (not shown, but its filter applies: the gaps grid's stack column).
- ``server_grid(grid_id, columns, page_size=, empty=)``: a grid whose rows the server sends one
  page at a time (AG Grid's infinite row model, paged). The page registers a callback from
  ``Input(grid_id, "getRowsRequest")`` (``startRow``, ``endRow``, ``sortModel``, ``filterModel``)
  to ``Output(grid_id, "getRowsResponse")``, answered with ``rows_response(rows, row_count)``;
  sorting and filtering are the server's. Each row needs an ``id`` key, a string (AG Grid's row
  ids are strings): a click on a row gives it back as ``cellClicked["rowId"]``. ``values`` (column
  -> the distinct values it may show) sizes its text columns, since its rows are not known yet.
- ``table_grid(grid_id, columns, rows, page_size=, empty=)``: a grid of the rows given, sorted,
  filtered and paged in the browser; with no rows it is the ``empty`` message instead (element
  id ``<grid_id>-empty``), never an empty table.
Columns share the grid's width by their ``grow``, each at least as wide as its content needs
(``_content_px``: its header's longest word, so "Duration (ms)" wraps between its words and never
inside one; in a ``table_grid`` its longest cell, or longest word where it wraps, up to
``MAX_CONTENT_PX``) and
its kind (``MIN_PX``: a number of ``99,999.9`` or a ``host:port`` fits whole); text too long for
a column is cut with an ellipsis unless the column wraps, its whole text in the tooltip. The ``fileLine`` and ``number`` formatters are in
``assets/dashAgGridFunctions.js``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum

import dash_ag_grid as dag
from dash import html

from xlaprof.analysis.host.frames import short_location

TOOLTIP_DELAY_MS = 300  # hover this long over a source cell to see its full path
FILTER_DEBOUNCE_MS = 400  # typing pauses this long before a filter is applied


class ColumnKind(Enum):
    TEXT = "text"
    NUMBER = "number"  # ms or %: thousands separators, one decimal
    COUNT = "count"  # a whole number: thousands separators
    ID = "id"  # a number that names something (a program id): shown as it is
    SOURCE = "source"  # a file:line: the file's base name and line shown, the full path on hover


NUMERIC = (ColumnKind.NUMBER, ColumnKind.COUNT, ColumnKind.ID)
DECIMALS = {ColumnKind.NUMBER: 1, ColumnKind.COUNT: 0}
MIN_PX = {ColumnKind.NUMBER: 90, ColumnKind.COUNT: 75, ColumnKind.ID: 75, ColumnKind.SOURCE: 100,
          ColumnKind.TEXT: 80}
CHAR_PX = 7.6  # the width of a character of the grids' 13 px font, a little more than the average
CELL_PAD_PX = 26  # a cell's padding
HEADER_PAD_PX = 40  # a header's padding, sort arrow and resize handle
MAX_CONTENT_PX = 260  # a column grows for its content up to this; longer text is cut (its tooltip has it)
MAX_MEASURED_ROWS = 500  # rows measured for a column's width


@dataclass(frozen=True)
class Column:
    field: str  # the row key this column shows
    header: str  # its title
    kind: ColumnKind = ColumnKind.TEXT
    grow: int = 1  # share of the grid's width relative to the other columns
    wrap: bool = False  # long text wraps onto more lines (the row grows) instead of being cut
    sort: str | None = None  # "asc" or "desc": the initial sort
    colors: dict[str, str] = field(default_factory=dict)  # cell value -> text colour
    hidden: bool = False  # not shown; a filter set on it (``filterModel``) still applies
    tooltip: str | None = None  # the row key whose text a hover shows (None: a text cell's own text)
    min_px: int | None = None  # its narrowest width (None: its kind's, ``MIN_PX``)


def server_grid(grid_id: str, columns: list[Column], *, page_size: int, empty: str,
                values: dict[str, list] | None = None) -> dag.AgGrid:
    values = values or {}
    return dag.AgGrid(
        id=grid_id, columnDefs=[_column_def(c, _content_px(c, values.get(c.field, []))) for c in columns],
        defaultColDef=_DEFAULT_COL,
        rowModelType="infinite", getRowId="params.data.id", className=_CLASS,
        dashGridOptions={**_options(page_size, empty), "cacheBlockSize": page_size, "maxBlocksInCache": 20,
                         "infiniteInitialRowCount": page_size},
        style={"width": "100%"})


def table_grid(grid_id: str, columns: list[Column], rows: list[dict], *, page_size: int,
               empty: str) -> dag.AgGrid | html.P:
    if not rows:
        return html.P(empty, id=f"{grid_id}-empty", className="muted empty")
    options = _options(page_size, empty)
    if len(rows) <= page_size:
        options["pagination"] = False
    measured = rows[:MAX_MEASURED_ROWS]
    return dag.AgGrid(id=grid_id, columnDefs=[_column_def(c, _content_px(c, [r.get(c.field) for r in measured]))
                                              for c in columns],
                      defaultColDef=_DEFAULT_COL,
                      rowData=rows, className=_CLASS, dashGridOptions=options, style={"width": "100%"})


def rows_response(rows: list[dict], row_count: int) -> dict:
    """The ``getRowsResponse`` of a ``server_grid``: one block of rows and how many rows match."""
    return {"rowData": rows, "rowCount": row_count}


_CLASS = "xgrid"
_DEFAULT_COL = {"sortable": True, "resizable": True, "floatingFilter": True,
                "wrapHeaderText": True, "autoHeaderHeight": True, "suppressHeaderMenuButton": True}


def _options(page_size: int, empty: str) -> dict:
    # autoHeight: the grid is as tall as its page, so the page scrolls, not a box inside it.
    return {"domLayout": "autoHeight", "pagination": True, "paginationPageSize": page_size,
            "paginationPageSizeSelector": False, "tooltipShowDelay": TOOLTIP_DELAY_MS,
            "enableCellTextSelection": True, "localeText": {"noRowsToShow": empty, "noMatchingRows": empty}}


def _content_px(c: Column, values: list) -> int:
    """How wide ``c`` must be for its content (``values``: what its cells may show): the header's longest word (a header wraps at spaces,
    never inside a word) and its longest shown cell, or for a column that wraps its longest word (at
    most ``MAX_CONTENT_PX``: longer text is cut with its whole text in the tooltip)."""
    words = max(len(word) for word in c.header.split())
    width = words * CHAR_PX + HEADER_PAD_PX
    if not c.hidden and values:
        shown = [_shown(value, c.kind) for value in values]
        if c.wrap:  # its longest word, so that it wraps between words
            shown = [word for text in shown for word in text.split()]
        width = max(width, min(max(map(len, shown), default=0) * CHAR_PX + CELL_PAD_PX, MAX_CONTENT_PX))
    return max(int(width), c.min_px or MIN_PX[c.kind])


def _shown(value, kind: ColumnKind) -> str:
    """A cell's text as the grid shows it (``fileLine`` and ``number`` of dashAgGridFunctions.js)."""
    if value is None:
        return ""
    if kind is ColumnKind.SOURCE:
        return short_location(str(value))
    if kind in DECIMALS and isinstance(value, (int, float)):
        return f"{value:,.{DECIMALS[kind]}f}"
    return str(value)


def _column_def(c: Column, min_px: int) -> dict:
    number = c.kind in NUMERIC
    spec = {"field": c.field, "headerName": c.header, "flex": c.grow, "minWidth": min_px,
            "filter": "agNumberColumnFilter" if number else "agTextColumnFilter",
            "filterParams": {"debounceMs": FILTER_DEBOUNCE_MS, "maxNumConditions": 2}}
    if number:  # typing a number under a number column keeps the rows of at least that value
        spec["type"] = "numericColumn"
        spec["filterParams"]["defaultOption"] = "greaterThanOrEqual"
        if c.kind in DECIMALS:
            spec["valueFormatter"] = {"function": f"number(params.value, {DECIMALS[c.kind]})"}
    if c.kind is ColumnKind.SOURCE:
        spec["valueFormatter"] = {"function": "fileLine(params.value)"}
    if c.tooltip or not number:
        spec["tooltipField"] = c.tooltip or c.field
    if c.wrap:
        spec.update(wrapText=True, autoHeight=True, cellClass="cell-wrap")
    if c.sort:
        spec["sort"] = c.sort
    if c.hidden:
        spec["hide"] = True
    if c.colors:
        spec["cellStyle"] = {"styleConditions": [
            {"condition": f"params.value === {json.dumps(value)}", "style": {"color": colour, "fontWeight": "600"}}
            for value, colour in c.colors.items()]}
    return spec

