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
  window.Plotly.react(node, traces, layout, PLOTLY_CONFIG);
}

export function extend(node, update, indices, maxPoints) {
  window.Plotly.extendTraces(node, update, indices, maxPoints);
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
