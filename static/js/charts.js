// What every chart shares: one palette, plotly's options, the legend above
// the plot, and thinning a long series without losing its spikes. Plotly is
// the global the page loads before its modules (from the vendor route).

export const COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d", "#64748b", "#ca8a04"];
export const PLOTLY_CONFIG = { displaylogo: false, responsive: true };

// A new object each time: plotly writes what it works out into the layout.
export function legendAbove() {
  return { orientation: "h", y: 1.02, yanchor: "bottom" };
}

export function colour(i) {
  return COLOURS[i % COLOURS.length];
}

// Draws the figure, or updates it in place when the node already holds one.
export function plot(node, traces, layout) {
  waiting.delete(node);  // the traces drawn hold every point added so far
  window.Plotly.react(node, traces, layout, PLOTLY_CONFIG);
}

// A chart's redraw costs the browser tens of milliseconds of CPU: on a
// machine that also trains, a page that redrew its charts at every report
// (twice a second) took 10% off a CPU run's throughput (docs/benchmarks.md).
// So points are added in batches every EXTEND_MS, and only to charts on the
// screen of a page that is shown: a chart scrolled into view, or a page
// shown again, draws what it missed at once.
const EXTEND_MS = 2000;
const waiting = new Map();  // node -> {points: Map(trace index -> {x, y, customdata}), maxPoints}
const onScreen = new Set();
let timer = null;

function shown(node) {
  return !document.hidden && onScreen.has(node);
}

function flush(node) {
  const queued = waiting.get(node);
  if (!queued) return;
  waiting.delete(node);
  const indices = [...queued.points.keys()];
  const update = {};
  for (const field of ["x", "y", "customdata"]) {
    if (queued.points.get(indices[0])[field]) update[field] = indices.map((i) => queued.points.get(i)[field]);
  }
  window.Plotly.extendTraces(node, update, indices, queued.maxPoints);
}

function flushShown() {
  timer = null;
  for (const node of [...waiting.keys()]) if (shown(node)) flush(node);
}

const seen = new WeakSet();  // charts whose place the observer has reported once

// A chart that comes into view draws what it missed at once; one found on
// the screen when first observed waits for the next batch.
const watcher = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    const cameIntoView = seen.has(entry.target);
    seen.add(entry.target);
    if (entry.isIntersecting) {
      onScreen.add(entry.target);
      if (cameIntoView && !document.hidden) flush(entry.target);
    } else {
      onScreen.delete(entry.target);
    }
  }
});

document.addEventListener("visibilitychange", () => { if (!document.hidden) flushShown(); });

// Adds points to a drawn chart's traces: update holds, per field (x, y,
// customdata), one array per trace in indices, as Plotly.extendTraces takes
// them; a trace keeps its last maxPoints points when given.
export function extend(node, update, indices, maxPoints) {
  watcher.observe(node);  // observing a node twice changes nothing
  if (!waiting.has(node)) waiting.set(node, { points: new Map(), maxPoints });
  const queued = waiting.get(node);
  indices.forEach((index, n) => {
    if (!queued.points.has(index)) queued.points.set(index, {});
    const trace = queued.points.get(index);
    for (const [field, arrays] of Object.entries(update)) {
      trace[field] = (trace[field] || []).concat(arrays[n]);
      if (maxPoints !== undefined) trace[field] = trace[field].slice(-maxPoints);
    }
  });
  if (timer === null) timer = setTimeout(flushShown, EXTEND_MS);
}

// The lowest and highest item of each of limit/2 buckets, in order (as the
// server thins a series): a long run keeps its spikes. `value` reads the
// number an item is compared by.
export function thin(items, limit, value = (item) => item) {
  if (items.length <= limit) return items;
  const buckets = Math.max(1, Math.floor(limit / 2));
  const kept = [];
  for (let b = 0; b < buckets; b += 1) {
    const start = Math.floor((b * items.length) / buckets), end = Math.floor(((b + 1) * items.length) / buckets);
    let low = start, high = start;
    for (let i = start; i < end; i += 1) {
      if (value(items[i]) < value(items[low])) low = i;
      if (value(items[i]) > value(items[high])) high = i;
    }
    kept.push(items[Math.min(low, high)]);
    if (low !== high) kept.push(items[Math.max(low, high)]);
  }
  return kept;
}
