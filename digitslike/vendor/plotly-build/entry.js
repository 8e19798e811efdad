'use strict';

// The traces digitslike's pages draw: scatter (in the core), bar, heatmap,
// and the WebGL ones in their strict form (no code made at run time).
var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/src/traces/scattergl/strict'),
    require('plotly.js/src/traces/parcoords/strict')
]);

module.exports = Plotly;
