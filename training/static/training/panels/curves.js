// The metrics, learning-rate and throughput charts: drawn once from the
// page's series, then extended in place as points arrive (in batches, and
// only while on the screen: see extend in js/charts.js), and redrawn only
// after a resume or when a page left open for very long thins its curves.
import { isNumber } from "../../js/format.js";
import { COLOURS, extend, legendAbove, plot, thin } from "../../js/charts.js";
import { data, metrics } from "./page.js";

// A page left open on a long run thins its own curves past this many points.
const MAX_LIVE_POINTS = 20000;

// From the page's event vocabulary: per metric kind, series name -> field
// of the event that carries it (a dotted path for a field of a nested object).
export const FIELDS = data.series_fields;

const series = data.series;

class CurveChart {
  // traces: [{key, name, yaxis?, color, dash?, markers?}] each drawn from series[key]: [step, epoch, value];
  // withPoints: only the traces whose series has points when the chart is drawn
  // (the loss's parts: each network reports some of its task's).
  constructor(id, traces, layout, withPoints = false) {
    this.node = document.getElementById(id);
    this.all = traces;
    this.traces = traces;
    this.withPoints = withPoints;
    this.layout = { height: 280, margin: { t: 28, r: 60, b: 44, l: 60 }, legend: legendAbove(),
      xaxis: { title: { text: "epoch" } }, uirevision: "keep", ...layout };
    this.drawn = false;
  }

  keys() { return this.traces.map((t) => t.key); }

  trace(t) {
    const points = series[t.key];
    return {
      type: "scatter", mode: t.markers ? "lines+markers" : "lines", marker: { size: 4 }, name: t.name, yaxis: t.yaxis || "y",
      line: { color: t.color, dash: t.dash, width: 1.6 },
      x: points.map((p) => p[1]), y: points.map((p) => p[2]), customdata: points.map((p) => p[0]),
      hovertemplate: `${t.name}: %{y:.4g}<br>epoch %{x:.2f} · step %{customdata}<extra></extra>`,
    };
  }

  draw() {
    if (!this.node) return;
    this.drawn = true;
    if (this.withPoints) this.traces = this.all.filter((t) => series[t.key].length);
    plot(this.node, this.traces.map((t) => this.trace(t)), this.layout);
  }

  add(key, point) {
    if (!this.drawn) return;
    const index = this.keys().indexOf(key);
    if (index < 0) {
      if (this.withPoints && this.all.some((t) => t.key === key)) this.draw();  // a part's first point
      return;
    }
    extend(this.node, { x: [[point[1]]], y: [[point[2]]], customdata: [[point[0]]] }, [index]);
  }
}

// Accuracy and the data-wait share on round ticks: 0, 20, … 100%.
const PERCENT_AXIS = { overlaying: "y", side: "right", range: [0, 1], tick0: 0, dtick: 0.2, tickformat: ".0%", showgrid: false };

const charts = [
  new CurveChart("metrics-chart", [
    { key: "train_loss", name: "train loss", color: COLOURS[0] },
    { key: "val_loss", name: "val loss", color: COLOURS[1], markers: true },
    ...metrics.map((metric, i) => ({ key: metric.series, name: `val ${metric.label}`, yaxis: "y2",
      color: COLOURS[2 + i], dash: i ? "dot" : undefined, markers: true })),
  ], {
    height: 380, yaxis: { title: { text: "loss" }, rangemode: "tozero" },
    yaxis2: { title: { text: data.metrics_title }, ...PERCENT_AXIS },
  }),
  // From zero: a constant rate fills the chart's height instead of floating
  // on an axis Plotly centres around it.
  new CurveChart("lr-chart", [{ key: "lr", name: "learning rate", color: COLOURS[4] }], {
    yaxis: { title: { text: "learning rate" }, exponentformat: "e", rangemode: "tozero" }, showlegend: false,
    margin: { t: 12, r: 60, b: 44, l: 60 },
  }),
  new CurveChart("throughput-chart", [
    { key: "images_per_s", name: "images/s", color: COLOURS[5] },
    { key: "data_wait", name: "waiting for data", yaxis: "y2", color: COLOURS[6], dash: "dot" },
  ], {
    yaxis: { title: { text: "images/s" }, rangemode: "tozero" },
    yaxis2: { title: { text: "waiting for data" }, ...PERCENT_AXIS },
  }),
  new CurveChart("components-chart", data.loss_components.map((part, i) => ({
    key: part.series, name: part.label, color: COLOURS[(i + 1) % COLOURS.length],
  })), { yaxis: { title: { text: "loss" }, rangemode: "tozero" } }, true),
];

// A run with no points yet shows a note instead of empty axes.
let chartsShown = false;

function showCharts() {
  chartsShown = true;
  document.getElementById("training-empty").hidden = true;
  document.getElementById("training-charts").hidden = false;
  for (const chart of charts) chart.draw();
}

// The points a `train` or `val` event carries, added to their series and charts.
export function addPoints(kind, d) {
  for (const [key, field] of Object.entries(FIELDS[kind])) {
    const value = field.split(".").reduce((nested, part) => nested?.[part], d);
    if (!isNumber(value) || !isNumber(d.step) || !isNumber(d.epoch)) continue;
    const point = [d.step, d.epoch, value];
    series[key].push(point);
    if (!chartsShown) continue;
    if (series[key].length > MAX_LIVE_POINTS) {
      series[key] = thin(series[key], MAX_LIVE_POINTS / 2, (p) => p[2]);
      for (const chart of charts) if (chart.keys().includes(key)) chart.draw();
    } else {
      for (const chart of charts) chart.add(key, point);
    }
  }
  if (!chartsShown && (series.train_loss.length || series.val_loss.length)) showCharts();
}

// Forgets the points after `step` (a run resumed from there reports them again).
export function cutCurves(step) {
  for (const key of Object.keys(series)) series[key] = series[key].filter((p) => p[0] <= step);
  if (chartsShown) for (const chart of charts) chart.draw();
}

export function showCurves() {
  if (series.train_loss.length || series.val_loss.length) showCharts();
}
