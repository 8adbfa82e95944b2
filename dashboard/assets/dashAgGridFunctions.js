// Functions the dashboard's AG Grid column specs name (dashboard/grid.py); dash-ag-grid looks them up here.
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

// "/long/path/to/train.py:57" -> "train.py:57": the file and line fit a column; the tooltip has the full path.
dagfuncs.fileLine = function (value) {
  if (typeof value !== "string") {
    return value;
  }
  var parts = value.split(/[\\/]/);
  return parts[parts.length - 1];
};

// 2567.0938 -> "2,567.1" (decimals 1): the cards' format (xlaprof.units.format_ms) in every grid.
dagfuncs.number = function (value, decimals) {
  if (typeof value !== "number" || !isFinite(value)) {
    return value;
  }
  return value.toLocaleString("en-US", {minimumFractionDigits: decimals, maximumFractionDigits: decimals});
};
