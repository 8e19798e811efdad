// The training section of a model's job page: metrics, learning-rate and
// throughput charts, snapshots, result, performance with profiling,
// hardware, layers and the network. It starts from the data embedded in the
// page (downsampled by the server) and follows the page's stream: charts are
// extended in place, never redrawn, except after a `resume` event (and when
// a page left open for very long thins its curves).
import { on, api } from "../js/live.js";
import { duration, el } from "../js/format.js";

const Plotly = window.Plotly;
const data = JSON.parse(document.getElementById("training-data").textContent);
const CONFIG = { displaylogo: false, responsive: true };
const FLUSH_MS = 250;
// A page left open on a long run thins its own curves past this many points.
const MAX_LIVE_POINTS = 20000;
const HARDWARE_HISTORY = 120;
const TERMINAL = ["done", "failed", "aborted"];
const COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d"];

// The event vocabulary, from the page: the kinds, and per metric kind
// series name -> field of the event that carries it.
const KINDS = data.kinds;
const FIELDS = data.series_fields;

let through = data.through;

// ---- formatting -------------------------------------------------------------

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);
const num = (v, digits = 4) => (isNumber(v) ? Number(v.toPrecision(digits)).toString() : "—");
const pct = (v, digits = 1) => (isNumber(v) ? `${(v * 100).toFixed(digits)}%` : "—");
const fixed = (v, digits = 2) => (isNumber(v) ? v.toFixed(digits) : "—");
const count = (v) => (isNumber(v) ? v.toLocaleString() : "—");

function bytes(v) {
  if (!isNumber(v)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function flops(v) {
  if (!isNumber(v)) return "—";
  for (const [scale, unit] of [[1e12, "TFLOP"], [1e9, "GFLOP"], [1e6, "MFLOP"], [1e3, "kFLOP"]]) {
    if (v >= scale) return `${(v / scale).toFixed(2)} ${unit}`;
  }
  return `${v} FLOP`;
}

const fileUrl = (path) => data.files_url + path.split("/").map(encodeURIComponent).join("/");

function fresh(event) {
  if (event.seq <= through) return false;
  through = event.seq;
  return true;
}

function show(id) {
  const node = document.getElementById(id);
  if (node.hidden) node.hidden = false;
}

function fillList(list, rows) {
  list.replaceChildren(...rows.filter(([, v]) => v !== null && v !== undefined).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

// Lowest and highest point of each of limit/2 buckets, in order: spikes survive.
function thin(points, limit) {
  if (points.length <= limit) return points;
  const buckets = Math.max(1, Math.floor(limit / 2));
  const kept = [];
  for (let b = 0; b < buckets; b += 1) {
    const start = Math.floor((b * points.length) / buckets), end = Math.floor(((b + 1) * points.length) / buckets);
    let low = start, high = start;
    for (let i = start; i < end; i += 1) {
      if (points[i][2] < points[low][2]) low = i;
      if (points[i][2] > points[high][2]) high = i;
    }
    kept.push(points[Math.min(low, high)]);
    if (low !== high) kept.push(points[Math.max(low, high)]);
  }
  return kept;
}

// ---- curves: metrics, learning rate, throughput ----------------------------

const series = data.series;

class CurveChart {
  // traces: [{key, name, yaxis?, color, dash?, markers?}] each drawn from series[key]: [step, epoch, value]
  constructor(id, traces, layout) {
    this.node = document.getElementById(id);
    this.traces = traces;
    this.layout = { height: 280, margin: { t: 28, r: 60, b: 44, l: 60 }, legend: { orientation: "h", y: 1.02, yanchor: "bottom" },
      xaxis: { title: { text: "epoch" } }, uirevision: "keep", ...layout };
    this.pending = new Map();
    this.timer = null;
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
    this.pending.clear();
    this.drawn = true;
    Plotly.react(this.node, this.traces.map((t) => this.trace(t)), this.layout, CONFIG);
  }

  add(key, point) {
    if (!this.drawn || !this.keys().includes(key)) return;
    if (!this.pending.has(key)) this.pending.set(key, []);
    this.pending.get(key).push(point);
    if (this.timer === null) this.timer = setTimeout(() => this.flush(), FLUSH_MS);
  }

  flush() {
    this.timer = null;
    if (!this.pending.size) return;
    const indices = [], update = { x: [], y: [], customdata: [] };
    for (const [key, points] of this.pending) {
      indices.push(this.keys().indexOf(key));
      update.x.push(points.map((p) => p[1]));
      update.y.push(points.map((p) => p[2]));
      update.customdata.push(points.map((p) => p[0]));
    }
    this.pending.clear();
    Plotly.extendTraces(this.node, update, indices);
  }
}

const charts = [
  new CurveChart("metrics-chart", [
    { key: "train_loss", name: "train loss", color: COLOURS[0] },
    { key: "val_loss", name: "val loss", color: COLOURS[1], markers: true },
    { key: "val_top1", name: "val top-1", yaxis: "y2", color: COLOURS[2], markers: true },
    { key: "val_top5", name: "val top-5", yaxis: "y2", color: COLOURS[3], dash: "dot", markers: true },
  ], {
    height: 380, yaxis: { title: { text: "loss" }, rangemode: "tozero" },
    yaxis2: { title: { text: "accuracy" }, overlaying: "y", side: "right", range: [0, 1], tickformat: ".0%", showgrid: false },
  }),
  new CurveChart("lr-chart", [{ key: "lr", name: "learning rate", color: COLOURS[4] }], {
    yaxis: { title: { text: "learning rate" }, exponentformat: "e" }, showlegend: false, margin: { t: 12, r: 60, b: 44, l: 60 },
  }),
  new CurveChart("throughput-chart", [
    { key: "images_per_s", name: "images/s", color: COLOURS[5] },
    { key: "data_wait", name: "waiting for data", yaxis: "y2", color: COLOURS[6], dash: "dot" },
  ], {
    yaxis: { title: { text: "images/s" }, rangemode: "tozero" },
    yaxis2: { title: { text: "waiting for data" }, overlaying: "y", side: "right", range: [0, 1], tickformat: ".0%", showgrid: false },
  }),
];

function addPoints(kind, d) {
  for (const [key, field] of Object.entries(FIELDS[kind])) {
    const value = d[field];
    if (!isNumber(value) || !isNumber(d.step) || !isNumber(d.epoch)) continue;
    const point = [d.step, d.epoch, value];
    series[key].push(point);
    if (!chartsShown) continue;
    if (series[key].length > MAX_LIVE_POINTS) {
      series[key] = thin(series[key], MAX_LIVE_POINTS / 2);
      for (const chart of charts) if (chart.keys().includes(key)) chart.draw();
    } else {
      for (const chart of charts) chart.add(key, point);
    }
  }
  if (!chartsShown && (series.train_loss.length || series.val_loss.length)) showCharts();
}

// A run with no points yet shows a note instead of empty axes.
let chartsShown = false;

function showCharts() {
  chartsShown = true;
  document.getElementById("training-empty").hidden = true;
  document.getElementById("training-charts").hidden = false;
  for (const chart of charts) chart.draw();
}

for (const kind of Object.keys(FIELDS)) on(kind, (event) => { if (fresh(event)) addPoints(kind, event.data); });

// The run restarted from a checkpoint taken at this step: what the
// interrupted run reported after it is being reported again.
on(KINDS.resume, (event) => {
  if (!fresh(event)) return;
  const step = event.data.step;
  for (const key of Object.keys(series)) series[key] = series[key].filter((p) => p[0] <= step);
  data.snapshots = data.snapshots.filter((s) => s.step <= step);
  if (data.best && data.best.step > step) data.best = null;
  data.result = null;
  if (chartsShown) for (const chart of charts) chart.draw();
  showSnapshots();
  showResult();
});

// ---- snapshots and the model download -----------------------------------------

function bestStep() {
  if (data.best && isNumber(data.best.step)) return data.best.step;
  const marked = data.snapshots.filter((s) => s.best);
  return marked.length ? marked[marked.length - 1].step : null;
}

function showSnapshots() {
  const body = document.querySelector("#snapshots-table tbody");
  const best = bestStep();
  body.replaceChildren(...data.snapshots.map((s) => {
    const m = s.metrics || {};
    const file = s.file && s.exists !== false
      ? el("a", { href: fileUrl(s.file), download: "" }, s.file.split("/").pop())
      : el("span", { class: "muted" }, s.file ? "removed" : "—");
    return el("tr", { class: s.step === best ? "best" : "" },
      el("td", {}, fixed(s.epoch)), el("td", {}, count(s.step)), el("td", {}, num(m.val_loss)),
      el("td", {}, pct(m.val_top1)), el("td", {}, pct(m.val_top5)), el("td", {}, num(m.train_loss)),
      el("td", {}, s.step === best ? "★ best" : ""), el("td", {}, file));
  }));
  document.getElementById("snapshots").hidden = data.snapshots.length === 0;
  const candidates = [data.best && data.best.file, ...data.snapshots.filter((s) => s.exists !== false).map((s) => s.file).reverse()];
  const model = candidates.find((f) => f);
  const link = document.getElementById("download-model");
  if (model) link.href = fileUrl(model);
  link.hidden = !model;
}

on(KINDS.snapshot, (event) => {
  if (!fresh(event)) return;
  data.snapshots.push({ ...event.data, exists: true });
  showSnapshots();
});
on(KINDS.best, (event) => {
  if (!fresh(event)) return;
  data.best = event.data;
  showSnapshots();
});

// ---- result ---------------------------------------------------------------------

const METRIC_LABELS = { val_loss: "val loss", val_top1: "val top-1", val_top5: "val top-5", train_loss: "train loss" };

function metricValue(name, value) {
  return name && name.endsWith("loss") ? num(value) : pct(value);
}

function showResult() {
  const r = data.result;
  document.getElementById("training-result").hidden = !r;
  if (!r) return;
  const best = r.best || {};
  const final = r.final || {};
  const metrics = (prefix) => ["loss", "top1", "top5"]
    .filter((m) => isNumber(final[`${prefix}_${m}`]))
    .map((m) => `${m === "loss" ? "loss" : m.replace("top", "top-")} ${m === "loss" ? num(final[`${prefix}_${m}`]) : pct(final[`${prefix}_${m}`])}`)
    .join(" · ");
  fillList(document.getElementById("training-result-list"), [
    ["Best", best.metric ? `${METRIC_LABELS[best.metric] || best.metric} ${metricValue(best.metric, best.value)} at epoch ${fixed(best.epoch)}` : null],
    ["Final validation", metrics("val") || null],
    ["Test", metrics("test") || null],
    ["Epochs", isNumber(r.epochs) ? fixed(r.epochs) : null],
    ["Training time", isNumber(r.train_seconds) ? duration(r.train_seconds) : null],
    ["Images/s", isNumber(r.images_per_s) ? num(r.images_per_s, 5) : null],
    ["Stopped early", r.stopped_early ? "yes, the metric stopped improving" : "no"],
  ]);
}

on(KINDS.result, (event) => {
  if (!fresh(event)) return;
  data.result = event.data;
  showResult();
});

// ---- performance and profiling ----------------------------------------------------

function showPerf() {
  const p = data.perf;
  if (!p) return;
  show("performance");
  const wait = isNumber(p.data_wait) ? Math.min(Math.max(p.data_wait, 0), 1) : null;
  fillList(document.getElementById("perf-list"), [
    ["Device", p.device || "—"],
    ["Images/s", num(p.images_per_s, 5)],
    ["Step time", isNumber(p.step_ms) ? `${p.step_ms.toFixed(1)} ms` : "—"],
    ["Waiting for data", wait === null ? "—" : `${pct(wait)} (computing ${pct(1 - wait)})`],
    ["FLOPs per image", flops(p.flops_per_image)],
    // Model FLOP utilisation needs the GPU's peak: null on CPUs.
    ["MFU", isNumber(p.mfu) ? pct(p.mfu) : null],
  ]);
  const bar = document.getElementById("wait-bar");
  bar.hidden = wait === null;
  if (wait !== null) {
    bar.querySelector(".wait").style.width = `${wait * 100}%`;
    bar.querySelector(".compute").style.width = `${(1 - wait) * 100}%`;
  }
}

function showProfile() {
  const p = data.profile;
  if (!p) return;
  show("performance");
  document.getElementById("profile-result").hidden = false;
  const link = document.getElementById("profile-trace");
  link.href = fileUrl(p.file);
  link.textContent = `download the trace (${p.steps} steps)`;
  document.querySelector("#profile-table tbody").replaceChildren(...(p.top || []).map((op) => el("tr", {},
    el("td", {}, el("code", {}, op.name)), el("td", {}, count(op.calls)), el("td", {}, fixed(op.self_cpu_ms, 3)),
    el("td", {}, fixed(op.self_device_ms, 3)), el("td", {}, fixed(op.total_ms, 3)))));
}

const profileForm = document.getElementById("profile-form");
const profileNote = document.getElementById("profile-note");

function profileWaiting(waiting) {
  if (!profileForm) return;
  document.getElementById("profile-button").disabled = waiting;
  profileNote.textContent = waiting ? "Profiling the next steps…" : "";
}

if (profileForm) {
  profileForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await api("POST", data.profile_api);
      profileWaiting(true);
      show("performance");
    } catch (error) {
      profileNote.textContent = error.message;
    }
  });
}

on(KINDS.perf, (event) => {
  if (!fresh(event)) return;
  data.perf = event.data;
  showPerf();
});
on(KINDS.profile, (event) => {
  if (!fresh(event)) return;
  data.profile = event.data;
  profileWaiting(false);
  showProfile();
});

// ---- hardware ----------------------------------------------------------------------

const hardwareChart = document.getElementById("hardware-chart");

function hardwareTraces() {
  const readings = data.hardware;
  const x = readings.map((r) => new Date(r.t * 1000));
  const gpus = (readings[readings.length - 1]?.gpus || []).map((g) => g.index);
  return [
    ...gpus.map((index, i) => ({
      type: "scatter", mode: "lines", name: `GPU ${index} utilisation`, x, line: { color: COLOURS[i % COLOURS.length] },
      y: readings.map((r) => (r.gpus || []).find((g) => g.index === index)?.utilization ?? null),
    })),
    { type: "scatter", mode: "lines", name: "process CPU", x, y: readings.map((r) => r.cpu_percent), line: { color: "#475569", dash: "dot" } },
  ];
}

function drawHardware() {
  Plotly.react(hardwareChart, hardwareTraces(), {
    height: 220, margin: { t: 12, r: 12, b: 36, l: 48 }, legend: { orientation: "h", y: 1.02, yanchor: "bottom" },
    xaxis: { type: "date", tickformat: "%H:%M:%S" }, yaxis: { title: { text: "%" }, rangemode: "tozero" }, uirevision: "keep",
  }, CONFIG);
}

function showHardware() {
  const latest = data.hardware[data.hardware.length - 1];
  if (!latest) return;
  show("hardware");
  const gpus = latest.gpus || [];
  document.getElementById("gpu-table").hidden = gpus.length === 0;
  document.querySelector("#gpu-table tbody").replaceChildren(...gpus.map((g) => el("tr", {},
    el("td", {}, `${g.index}: ${g.name || ""}`),
    el("td", {}, isNumber(g.utilization) ? `${g.utilization}%` : "—"),
    el("td", {}, `${bytes(g.memory_used)} of ${bytes(g.memory_total)}`),
    el("td", {}, isNumber(g.temperature) ? `${g.temperature} °C` : "—"),
    el("td", {}, isNumber(g.power_watts) ? `${g.power_watts.toFixed(0)} W` : "—"))));
  document.getElementById("process-line").textContent =
    `Process: CPU ${isNumber(latest.cpu_percent) ? latest.cpu_percent.toFixed(0) : "—"}% · memory ${bytes(latest.rss_bytes)}`
    + (isNumber(latest.threads) ? ` · ${latest.threads} threads` : "") + (gpus.length ? "" : " · no GPU");
}

on(KINDS.hardware, (event) => {
  if (!fresh(event)) return;
  const previous = data.hardware[data.hardware.length - 1];
  data.hardware.push({ t: event.t, ...event.data });
  showHardware();
  const sameGpus = previous && JSON.stringify((previous.gpus || []).map((g) => g.index))
    === JSON.stringify((event.data.gpus || []).map((g) => g.index));
  data.hardware = data.hardware.slice(-HARDWARE_HISTORY);
  if (!sameGpus) {
    drawHardware();
    return;
  }
  const x = new Date(event.t * 1000);
  const values = [...(event.data.gpus || []).map((g) => g.utilization ?? null), event.data.cpu_percent];
  Plotly.extendTraces(hardwareChart, { x: values.map(() => [x]), y: values.map((v) => [v]) }, values.map((_, i) => i), HARDWARE_HISTORY);
});

// ---- layers --------------------------------------------------------------------------

const layerSelect = document.getElementById("layer-select");

function histogram(node, hist, color) {
  const edges = hist?.edges || [], counts = hist?.counts || [];
  const centres = counts.map((_, i) => (edges[i] + edges[i + 1]) / 2);
  const widths = counts.map((_, i) => edges[i + 1] - edges[i]);
  Plotly.react(node, [{ type: "bar", x: centres, y: counts, width: widths, marker: { color }, hovertemplate: "%{x:.3g}: %{y}<extra></extra>" }], {
    height: 220, margin: { t: 8, r: 8, b: 36, l: 48 }, bargap: 0, yaxis: { title: { text: "count" } },
  }, CONFIG);
}

function showHistograms() {
  const layer = (data.layers?.layers || []).find((l) => l.name === layerSelect.value);
  if (!layer) return;
  histogram(document.getElementById("weight-hist"), layer.weight_hist, COLOURS[0]);
  histogram(document.getElementById("grad-hist"), layer.grad_hist, COLOURS[1]);
}

function showLayers() {
  const d = data.layers;
  if (!d) return;
  show("layers");
  document.getElementById("layers-when").textContent = `at epoch ${fixed(d.epoch)}, step ${count(d.step)}`;
  const figure = document.getElementById("filters-figure");
  figure.hidden = !d.filters;
  figure.parentElement.classList.toggle("no-filters", !d.filters);
  if (d.filters) document.getElementById("filters-image").src = fileUrl(d.filters);
  const layers = d.layers || [];
  const chosen = layerSelect.value;
  layerSelect.replaceChildren(...layers.map((l) => el("option", { value: l.name }, l.name)));
  if (layers.some((l) => l.name === chosen)) layerSelect.value = chosen;
  showHistograms();
  const names = layers.map((l) => l.name);
  Plotly.react("norms-chart", [
    { type: "bar", name: "weight norm", x: names, y: layers.map((l) => l.weight_norm), marker: { color: COLOURS[0] } },
    { type: "bar", name: "gradient norm", x: names, y: layers.map((l) => l.grad_norm), marker: { color: COLOURS[1] } },
  ], {
    height: 240, margin: { t: 8, r: 8, b: 40, l: 56 }, barmode: "group",
    yaxis: { type: "log", title: { text: "L2 norm" }, dtick: 1, exponentformat: "power" }, xaxis: { type: "category", automargin: true },
    legend: { orientation: "h", y: 1.02, yanchor: "bottom" },
  }, CONFIG);
}

layerSelect.addEventListener("change", showHistograms);
on(KINDS.layers, (event) => {
  if (!fresh(event)) return;
  data.layers = event.data;
  showLayers();
});

// ---- network -------------------------------------------------------------------------

function showNetwork() {
  const n = data.network;
  if (!n) return;
  show("network");
  const s = n.summary || {};
  const input = Array.isArray(n.input) ? n.input.join("×") : "—";
  document.getElementById("network-summary").textContent =
    `Input ${input} · ${(n.classes || []).length} classes · ${count(s.params)} parameters (${count(s.trainable)} trainable)`
    + ` · ${flops(s.flops_per_image)} per image`;
  document.querySelector("#network-table tbody").replaceChildren(...(s.layers || []).map((l) => el("tr", {},
    el("td", {}, el("code", {}, l.name)), el("td", {}, l.type),
    el("td", {}, Array.isArray(l.output_shape) ? l.output_shape.join("×") : ""), el("td", {}, count(l.params)))));
}

on(KINDS.network, (event) => {
  if (!fresh(event)) return;
  data.network = event.data;
  showNetwork();
});

// ---- status: which buttons apply -------------------------------------------------------

const resumeForm = document.getElementById("resume-form");

on(KINDS.status, async (event) => {
  const status = event.data.status;
  data.status = status;
  if (profileForm) {
    profileForm.hidden = status !== "running";
    if (status !== "running") profileWaiting(false);
  }
  if (!resumeForm) return;
  if (!TERMINAL.includes(status)) {
    resumeForm.hidden = true;
    return;
  }
  // Only the server knows whether the run left a checkpoint to resume from.
  try {
    resumeForm.hidden = !(await api("GET", data.job_api)).resumable;
  } catch {
    resumeForm.hidden = true;
  }
});

if (data.profile_requested && data.status === "running") profileWaiting(true);
if (series.train_loss.length || series.val_loss.length) showCharts();
showSnapshots();
showResult();
showPerf();
showProfile();
if (data.hardware.length) {
  showHardware();
  drawHardware();
}
showLayers();
showNetwork();
