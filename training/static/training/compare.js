// The Compare page: many training runs side by side, from the data the server
// embeds (training/compare.py). A table of their settings and results
// (sortable, filtered by text and by the parallel coordinates' brushes), the
// curves of one metric overlaid, the parallel coordinates of the settings
// that differ and a result, and one setting against a result.
//
// A thousand runs must draw in well under two seconds: the table's rows are
// built once per set of columns (sorting moves them, filtering hides them),
// and past MAX_TRACES runs the curves are one trace, each run's points
// apart from the next's by a null, drawn with WebGL.
import { el, isNumber, num, pct, statusLabel } from "../js/format.js";
import { api } from "../js/live.js";
import { PLOTLY_CONFIG, colour, legendAbove } from "../js/charts.js";

const MAX_TRACES = 50;  // runs drawn as a trace each, with a legend
const LEGEND_ABOVE = 10;  // more runs than this: the legend goes to the right
const MAX_DIMENSIONS = 60;  // plotly's parcoords draws at most 60 axes
const MANY_COLOUR = "rgba(37, 99, 235, 0.35)";
const HIGHLIGHT_SCALE = [[0, "#d5dbe3"], [1, "#dc2626"]];

const data = JSON.parse(document.getElementById("compare-data").textContent);
const runs = data.runs;
const metrics = data.metrics;
const settingOf = new Map(data.settings.map((setting) => [setting.key, setting]));
const $ = (id) => document.getElementById(id);

const isShare = (metric) => metric.higher;
const showMetric = (metric, value) => (isShare(metric) ? pct(value, 2) : num(value));
const hoverFormat = (metric) => (isShare(metric) ? ".2%" : ".4g");
const bestOf = (run, key) => run.best[key]?.value;

function settingText(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "number") return num(value);
  return String(value);
}

// Numbers by value, text as people read it ("2" before "10"); missing last.
function compareValues(a, b) {
  const aMissing = a === null || a === undefined || Number.isNaN(a);
  const bMissing = b === null || b === undefined || Number.isNaN(b);
  if (aMissing || bMissing) return aMissing - bMissing;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

async function draw(node, traces, layout) {
  await window.Plotly.react(node, traces, layout, PLOTLY_CONFIG);
}

// Plotly shows this where it could not start WebGL (a browser without it, or
// a bundle whose WebGL code the page's script policy refuses to compile).
const webglFailed = (node) => node.querySelector(".no-webgl") !== null;

function options(select, items, chosen) {
  select.replaceChildren(...items.map(([value, text]) => el("option", { value, selected: value === chosen }, text)));
}

// ---- the table ---------------------------------------------------------------------------

const table = $("compare-table");
const filter = $("compare-filter");
const allSettings = $("compare-all-settings");
let columns = [];
let rows = [];  // per run (in data order): {tr, text}
let sortColumn = null, sortDescending = false;
let brushed = null;  // per run: inside every brushed range, or null when nothing is brushed

function makeColumns() {
  const shownSettings = data.settings.filter((setting) => allSettings.checked || setting.differs);
  return [
    { id: "name", label: "Name", value: (run) => run.name,
      cell: (run) => el("td", {}, el("a", { href: run.url, title: run.label }, run.name)) },
    { id: "owner", label: "Owner", value: (run) => run.owner, cell: (run) => el("td", {}, run.owner) },
    { id: "status", label: "Status", value: (run) => statusLabel(run.status) ?? run.status,
      cell: (run) => el("td", { class: `status ${run.status}` }, statusLabel(run.status) ?? run.status) },
    ...shownSettings.map((setting) => ({
      id: `setting:${setting.key}`, label: setting.key, value: (run) => run.settings[setting.key],
      cell: (run) => {
        const text = settingText(run.settings[setting.key]);
        return el("td", { class: "setting", title: text.length > 24 ? text : null }, text);
      },
    })),
    ...metrics.flatMap((metric) => [
      { id: `final:${metric.key}`, label: "final", metric, value: (run) => run.final[metric.key],
        cell: (run) => el("td", { class: "value final" }, showMetric(metric, run.final[metric.key])) },
      { id: `best:${metric.key}`, label: "best", metric, value: (run) => bestOf(run, metric.key),
        cell: (run) => {
          const best = run.best[metric.key];
          return el("td", { class: "value", title: best ? `at epoch ${num(best.epoch)}` : null },
            showMetric(metric, best?.value));
        } },
    ]),
  ];
}

function header() {
  const plain = columns.filter((column) => !column.metric);
  const sortable = (column, attrs = {}) => el("th", { ...attrs, dataset: { sort: column.id },
    class: [attrs.class, column.id === sortColumn ? "sorted" : "", column.id === sortColumn && sortDescending ? "descending" : ""]
      .filter(Boolean).join(" ") }, column.label);
  const top = el("tr", {}, ...plain.map((column) => sortable(column, { rowspan: 2 })),
    ...metrics.map((metric) => el("th", { class: "metric", colspan: 2 }, metric.label)));
  const bottom = el("tr", {}, ...columns.filter((column) => column.metric)
    .map((column) => sortable(column, { class: column.label, title: `${column.label} ${column.metric.label}` })));
  table.tHead.replaceChildren(top, bottom);
}

// The header's second row sticks right under its first, whose height is
// known once the rows are in.
function placeHeader() {
  const first = table.tHead.rows[0];
  if (first) table.style.setProperty("--head-row", `${Math.floor(first.getBoundingClientRect().height) - 1}px`);
}

function buildTable() {
  columns = makeColumns();
  if (!columns.some((column) => column.id === sortColumn)) sortColumn = null;
  header();
  rows = runs.map((run, i) => {
    const tr = el("tr", { dataset: { run: run.id, index: i } }, ...columns.map((column) => column.cell(run)));
    return { tr, text: tr.textContent.toLowerCase() };
  });
  sortRows();
  applyFilters();
  placeHeader();
}

function sortRows() {
  const order = runs.map((_, i) => i);
  const column = columns.find((c) => c.id === sortColumn);
  if (column) {
    const values = runs.map(column.value);
    order.sort((a, b) => {
      const [x, y] = [values[a], values[b]];
      const missing = (x === null || x === undefined) || (y === null || y === undefined);
      const found = compareValues(x, y);
      return (sortDescending && !missing ? -found : found) || a - b;
    });
  }
  table.tBodies[0].replaceChildren(...order.map((i) => rows[i].tr));
  table.querySelectorAll("th[data-sort]").forEach((th) => {
    th.classList.toggle("sorted", th.dataset.sort === sortColumn);
    th.classList.toggle("descending", th.dataset.sort === sortColumn && sortDescending);
  });
}

function applyFilters() {
  const text = filter.value.trim().toLowerCase();
  let shown = 0;
  rows.forEach((row, i) => {
    const visible = (!text || row.text.includes(text)) && (!brushed || brushed[i]);
    row.tr.hidden = !visible;
    shown += visible;
  });
  $("compare-shown").textContent = `${shown} of ${runs.length} runs shown`;
}

table.tHead.addEventListener("click", (event) => {
  const th = event.target.closest("th[data-sort]");
  if (!th) return;
  sortDescending = th.dataset.sort === sortColumn ? !sortDescending : false;
  sortColumn = th.dataset.sort;
  sortRows();
});
filter.addEventListener("input", applyFilters);
allSettings.addEventListener("change", buildTable);

// ---- the curves ---------------------------------------------------------------------------

const curvesChart = $("compare-curves-chart");
const curvesMetric = $("compare-curves-metric");
let curvesWebgl = true;

function curveTraces(metric) {
  const withCurve = runs.map((run, i) => [run, i]).filter(([run]) => run.curves[metric.key]?.length);
  const hovertemplate = `%{text}<br>epoch %{x:.2f}: %{y:${hoverFormat(metric)}}<extra></extra>`;
  if (runs.length <= MAX_TRACES) {
    return withCurve.map(([run, i]) => {
      const points = run.curves[metric.key];
      return { type: "scatter", mode: "lines", name: run.label, text: run.label, line: { color: colour(i), width: 1.5 },
        x: points.map((p) => p[0]), y: points.map((p) => p[1]), hovertemplate };
    });
  }
  // One trace for them all: a trace each draws far too slowly past a few dozen.
  const x = [], y = [], text = [];
  for (const [run] of withCurve) {
    for (const [epoch, value] of run.curves[metric.key]) { x.push(epoch); y.push(value); text.push(run.label); }
    x.push(null); y.push(null); text.push("");
  }
  return [{ type: curvesWebgl ? "scattergl" : "scatter", mode: "lines", connectgaps: false, showlegend: false,
    line: { color: MANY_COLOUR, width: 1 }, x, y, text, hovertemplate }];
}

// The page embeds the first metric's curves; another's come from the API when
// first shown (on a page of a thousand runs the curves are most of its bytes).
const curvesHeld = new Set(data.curves ?? metrics.map((metric) => metric.key));

async function fetchCurves(key) {
  if (curvesHeld.has(key)) return;
  const more = await api("GET", `${data.api}&curves=${encodeURIComponent(key)}&points=${data.points}`);
  const byId = new Map(more.runs.map((run) => [run.id, run.curves]));
  for (const run of runs) if (byId.get(run.id)?.[key]) run.curves[key] = byId.get(run.id)[key];
  curvesHeld.add(key);
}

async function drawCurves() {
  const metric = metrics.find((m) => m.key === curvesMetric.value) ?? metrics[0];
  try {
    await fetchCurves(metric.key);
  } catch (error) {
    $("compare-curves-note").textContent = `Could not load the ${metric.label} curves: ${error.message}`;
    return;
  }
  const traces = curveTraces(metric);
  const legend = runs.length <= LEGEND_ABOVE ? legendAbove() : { orientation: "v", x: 1.02, y: 1, yanchor: "top" };
  const layout = { height: runs.length <= LEGEND_ABOVE ? 420 : 460, margin: { t: 12, r: 12, b: 44, l: 64 },
    hovermode: "closest", showlegend: runs.length <= MAX_TRACES, legend,
    xaxis: { title: { text: "epoch" } },
    yaxis: { title: { text: metric.label }, ...(isShare(metric) ? { tickformat: ".0%" } : {}) } };
  const drawnRuns = runs.filter((run) => run.curves[metric.key]?.length).length;
  $("compare-curves-note").textContent = drawnRuns === runs.length ? ""
    : `${runs.length - drawnRuns} of ${runs.length} runs have no ${metric.label} yet.`;
  await draw(curvesChart, traces, layout);
  if (traces[0]?.type === "scattergl" && webglFailed(curvesChart)) {
    curvesWebgl = false;  // drawn with SVG instead: slower, but drawn
    window.Plotly.purge(curvesChart);
    await draw(curvesChart, curveTraces(metric), layout);
  }
}

curvesMetric.addEventListener("change", drawCurves);

// ---- the parallel coordinates ---------------------------------------------------------------

const parallelChart = $("compare-parallel-chart");
const parallelMetric = $("compare-parallel-metric");
let dimensions = [];  // as drawn: {label, values (per run, in data order)}
let colourValues = [];
let highlighted = null;

// Ticks of a log10 axis that read as the settings' own values.
function logTicks(values) {
  const distinct = [...new Set(values.filter((v) => isNumber(v) && v > 0))].sort((a, b) => a - b);
  let ticks = distinct;
  if (distinct.length > 8) {
    ticks = [];
    for (let power = Math.floor(Math.log10(distinct[0])); power <= Math.ceil(Math.log10(distinct.at(-1))); power += 1) {
      ticks.push(10 ** power);
    }
  }
  return { tickvals: ticks.map(Math.log10), ticktext: ticks.map((v) => num(v)) };
}

function settingDimension(setting) {
  const raw = runs.map((run) => run.settings[setting.key]);
  if (setting.numeric && setting.log) {
    return { label: setting.key, values: raw.map((v) => (isNumber(v) && v > 0 ? Math.log10(v) : NaN)), ...logTicks(raw) };
  }
  if (setting.numeric) return { label: setting.key, values: raw.map((v) => (isNumber(v) ? v : NaN)) };
  const texts = raw.map(settingText);
  const categories = [...new Set(texts)].sort(compareValues);
  const index = new Map(categories.map((text, i) => [text, i]));
  return { label: setting.key, values: texts.map((text) => index.get(text)), range: [0, Math.max(1, categories.length - 1)],
    tickvals: categories.map((_, i) => i), ticktext: categories.map((text) => (text.length > 18 ? `${text.slice(0, 17)}…` : text)) };
}

function parallelTrace(metric, kept) {
  const differing = data.settings.filter((setting) => setting.differs).slice(0, MAX_DIMENSIONS - 1);
  const best = runs.map((run) => bestOf(run, metric.key) ?? NaN);
  dimensions = [...differing.map(settingDimension),
    { label: `best ${metric.label}`, values: best, ...(isShare(metric) ? { tickformat: ".1%" } : {}) }];
  for (const dimension of dimensions) {
    if (kept.has(dimension.label)) dimension.constraintrange = kept.get(dimension.label);
  }
  const found = best.filter(isNumber);
  const low = found.length ? Math.min(...found) : 0;
  colourValues = best.map((v) => (isNumber(v) ? v : low));
  return { type: "parcoords", dimensions, labelangle: dimensions.length > 6 ? -20 : 0, labelside: "top",
    line: lineColours(metric) };
}

function lineColours(metric) {
  if (highlighted !== null) {
    return { color: runs.map((_, i) => (i === highlighted ? 1 : 0)), colorscale: HIGHLIGHT_SCALE, cmin: 0, cmax: 1,
      showscale: false };
  }
  return { color: colourValues, colorscale: "Viridis", reversescale: !metric.higher, showscale: false };
}

const chosenParallelMetric = () => metrics.find((m) => m.key === parallelMetric.value) ?? metrics[0];

async function drawParallel() {
  // The settings' brushes stay when the metric changes; the old metric's goes.
  const kept = new Map((parallelChart.data?.[0]?.dimensions ?? [])
    .filter((dimension) => dimension.constraintrange).map((dimension) => [dimension.label, dimension.constraintrange]));
  const trace = parallelTrace(chosenParallelMetric(), kept);
  const labelRoom = dimensions.length > 6 ? 110 : 60;
  await draw(parallelChart, [trace], { height: 420, margin: { t: labelRoom, r: 48, b: 28, l: 64 } });
  if (webglFailed(parallelChart)) {
    window.Plotly.purge(parallelChart);
    parallelChart.hidden = true;
    $("compare-parallel-controls").hidden = true;
    const problem = $("compare-parallel-problem");
    problem.textContent = "The parallel coordinates need WebGL, which this browser could not start.";
    problem.hidden = false;
    return;
  }
  updateBrushes();
}

// Which runs lie inside every brushed range, from the ranges the chart holds.
function updateBrushes() {
  const drawn = parallelChart.data?.[0]?.dimensions ?? [];
  const ranges = drawn.map((dimension, d) => [d, dimension.constraintrange]).filter(([, range]) => range?.length);
  if (!ranges.length) {
    brushed = null;
  } else {
    brushed = runs.map((_, i) => ranges.every(([d, range]) => {
      const value = dimensions[d]?.values[i];
      const spans = Array.isArray(range[0]) ? range : [range];
      return isNumber(value) && spans.some(([lo, hi]) => value >= Math.min(lo, hi) && value <= Math.max(lo, hi));
    }));
  }
  $("compare-brushed").textContent = brushed
    ? `Brushed on ${ranges.map(([d]) => dimensions[d]?.label).join(", ")}: ${brushed.filter(Boolean).length} run(s) inside.`
    : "";
  applyFilters();
}

// A table row pointed at draws its run's line red over the others in grey:
// one restyle of the lines' colours, once the pointer rests on a row for
// HIGHLIGHT_MS (sweeping over many rows redraws once, not for each).
const HIGHLIGHT_MS = 60;
let highlightTimer = null, highlightDrawn = null;
function highlight(index) {
  highlighted = index;
  clearTimeout(highlightTimer);
  highlightTimer = setTimeout(() => {
    if (highlighted === highlightDrawn || !parallelChart.data || parallelChart.hidden) return;
    highlightDrawn = highlighted;
    window.Plotly.restyle(parallelChart, { line: [lineColours(chosenParallelMetric())] }, [0]);
  }, HIGHLIGHT_MS);
}

table.tBodies[0].addEventListener("mouseover", (event) => {
  const tr = event.target.closest("tr[data-index]");
  if (tr) highlight(Number(tr.dataset.index));
});
table.tBodies[0].addEventListener("mouseleave", () => highlight(null));
parallelMetric.addEventListener("change", drawParallel);

// ---- the scatter -----------------------------------------------------------------------------

const scatterChart = $("compare-scatter-chart");
const scatterX = $("compare-scatter-x");
const scatterY = $("compare-scatter-y");

async function drawScatter() {
  const setting = settingOf.get(scatterX.value) ?? data.settings[0];
  const metric = metrics.find((m) => m.key === scatterY.value) ?? metrics[0];
  if (!setting) return;
  const x = runs.map((run) => {
    const value = run.settings[setting.key];
    if (value === undefined || value === null) return null;
    return setting.numeric ? value : settingText(value);
  });
  const trace = { type: "scatter", mode: "markers", x, y: runs.map((run) => bestOf(run, metric.key) ?? null),
    text: runs.map((run) => run.label || run.name), customdata: runs.map((run) => run.url),
    marker: { size: 9, color: runs.length <= MAX_TRACES ? runs.map((_, i) => colour(i)) : MANY_COLOUR,
      line: { width: 1, color: "#fff" } },
    hovertemplate: `%{text}<br>${setting.key} %{x}<br>best ${metric.label} %{y:${hoverFormat(metric)}}<extra></extra>` };
  const xaxis = { title: { text: setting.key }, type: setting.log ? "log" : setting.numeric ? "linear" : "category" };
  await draw(scatterChart, [trace], { height: 400, margin: { t: 12, r: 12, b: 50, l: 64 }, hovermode: "closest",
    xaxis, yaxis: { title: { text: `best ${metric.label}` }, ...(isShare(metric) ? { tickformat: ".0%" } : {}) } });
}

scatterX.addEventListener("change", drawScatter);
scatterY.addEventListener("change", drawScatter);

// ---- the page --------------------------------------------------------------------------------

async function start() {
  const metricItems = metrics.map((metric) => [metric.key, metric.label]);
  options(curvesMetric, metricItems, metrics[0]?.key);
  options(parallelMetric, metricItems, metrics[0]?.key);
  options(scatterY, metricItems, metrics[0]?.key);
  options(scatterX, data.settings.map((setting) => [setting.key, setting.key]), data.settings[0]?.key);
  buildTable();
  performance.mark("compare-table");  // each step's end, for bench/compare_scale.py
  await drawCurves();
  performance.mark("compare-curves");
  await drawScatter();
  performance.mark("compare-scatter");
  // The parallel coordinates last: in a browser without a GPU, WebGL's
  // software start takes most of a second, and the rest is shown meanwhile.
  await drawParallel();
  parallelChart.on?.("plotly_restyle", ([update]) => {
    if (Object.keys(update ?? {}).some((key) => key.includes("constraintrange"))) updateBrushes();
  });
  scatterChart.on("plotly_click", (event) => {
    const url = event.points?.[0]?.customdata;
    if (url) window.location.assign(url);
  });
  performance.mark("compare-ready");
  document.body.dataset.compareReady = "true";
}

start();
