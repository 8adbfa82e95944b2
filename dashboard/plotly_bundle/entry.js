'use strict';
// The plotly.js of the dashboard: only the traces its figures draw (scatter is in the core), about
// 1.3 MB instead of the full bundle's 4.8 MB. Built by build.sh into ../assets/plotly-xlaprof.min.js;
// add a trace here (and rebuild) before a figure uses a new go.<Trace>.
var Plotly = require('plotly.js/lib/core');
Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/pie'),
    require('plotly.js/lib/icicle'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/lib/histogram'),
]);
module.exports = Plotly;
