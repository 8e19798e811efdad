// A search's page: the best trial so far, every trial's value in the order
// they were made with the best so far, each trial's validations (a stopped
// trial's line ends at its rung), what mattered, and the trials' table.
// Read again every 5 s while trials run or remain to be made.
import { api } from "../js/live.js";
import { el, num, pct } from "../js/format.js";
import { colour, legendAbove, plot } from "../js/charts.js";

const RELOAD_MS = 5000;
let data = JSON.parse(document.getElementById("search-data").textContent);

const share = data.metric !== "val_loss";
const show = (value) => (value === null || value === undefined ? "—" : share ? pct(value, 2) : num(value));
const axis = (title) => ({ title: { text: title }, ...(share ? { tickformat: ".0%" } : {}) });
const layout = (x, y) => ({ height: 340, margin: { t: 12, r: 12, b: 44, l: 64 }, xaxis: { title: { text: x } },
  yaxis: axis(y), legend: legendAbove(), hovermode: "closest", uirevision: "keep" });

function settings(params) {
  return Object.entries(params).map(([name, value]) => `${name} ${typeof value === "number" ? num(value) : value}`).join(", ");
}

function stateText(trial) {
  if (trial.state === "pruned") return `Stopped early at epoch ${num(trial.rung)}`;
  if (trial.state === "running" && trial.job) return trial.job.status === "running" ? "Running" : "Waiting for a device";
  return trial.state_label;
}

function drawBest() {
  const best = data.best;
  const node = document.getElementById("search-best");
  node.replaceChildren(...(best ? [`Trial #${best.number}: ${data.metric_label} `, el("strong", {}, show(best.value)),
    ` with ${settings(best.params)} · `, el("a", { href: best.job.url }, best.job.name)] : ["No trial has completed yet."]));
}

function drawHistory() {
  const done = data.trials.filter((t) => t.value !== null);
  let best = null;
  const bestSoFar = done.filter((t) => t.state === "complete").map((t) => {
    best = best === null || (data.maximize ? t.value > best : t.value < best) ? t.value : best;
    return [t.number, best];
  });
  const dots = (state, name, symbol, color) => {
    const trials = done.filter((t) => t.state === state);
    return { type: "scatter", mode: "markers", name, x: trials.map((t) => t.number), y: trials.map((t) => t.value),
      marker: { symbol, size: 9, color }, text: trials.map((t) => settings(t.params)),
      hovertemplate: `#%{x}: %{y:${share ? ".2%" : ".4g"}}<br>%{text}<extra>${name}</extra>` };
  };
  plot("search-history-chart", [
    dots("complete", "complete", "circle", colour(0)), dots("pruned", "stopped early (its best before)", "x", "#9ca3af"),
    { type: "scatter", mode: "lines", name: "best so far", line: { shape: "hv", color: colour(1) },
      x: bestSoFar.map((p) => p[0]), y: bestSoFar.map((p) => p[1]), hoverinfo: "skip" },
  ], { ...layout("trial", data.metric_label), xaxis: { title: { text: "trial" }, tickformat: "d", rangemode: "tozero" } });
}

function drawCurves() {
  const traces = data.trials.filter((t) => t.values.length).map((t) => ({
    type: "scatter", mode: "lines+markers", name: `#${t.number}`, marker: { size: 5 },
    line: { color: t.state === "pruned" ? "#9ca3af" : colour(t.number), dash: t.state === "pruned" ? "dot" : "solid" },
    x: t.values.map((v) => v[0]), y: t.values.map((v) => v[1]),
    hovertemplate: `#${t.number} (${settings(t.params)}): %{y:${share ? ".2%" : ".4g"}} at epoch %{x}<extra></extra>`,
  }));
  plot("search-curves-chart", traces, { ...layout("epoch", data.metric_label), showlegend: traces.length <= 12 });
}

function drawImportances() {
  const entries = Object.entries(data.importances).sort((a, b) => a[1] - b[1]);
  document.getElementById("search-importances-empty").hidden = entries.length > 0;
  document.getElementById("search-importances-chart").hidden = entries.length === 0;
  if (!entries.length) return;
  plot("search-importances-chart", [{ type: "bar", orientation: "h", x: entries.map((e) => e[1]),
    y: entries.map((e) => e[0]), marker: { color: colour(0) }, hovertemplate: "%{y}: %{x:.0%}<extra></extra>" }],
  { height: 80 + 36 * entries.length, margin: { t: 8, r: 12, b: 36, l: 110 }, xaxis: { tickformat: ".0%", range: [0, 1] } });
}

function drawTable() {
  document.querySelector("#search-table tbody").replaceChildren(...data.trials.map((t) => el("tr", { dataset: { trial: t.number } },
    el("td", {}, `#${t.number}`), el("td", {}, settings(t.params)),
    el("td", { class: `state ${t.state}`, title: t.message }, stateText(t), t.message ? el("small", { class: "muted" }, ` ${t.message}`) : ""),
    el("td", {}, show(t.value)),
    el("td", {}, t.job ? el("a", { href: t.job.url }, t.job.name) : "—"))));
  const { counts } = data;
  document.getElementById("search-progress").textContent = `${data.trials.length} of ${data.trials_wanted} trials made, `
    + `${counts.running} running, ${counts.complete} complete, ${counts.pruned} stopped early, ${counts.failed} failed`
    + (data.active ? " · updating every 5 s" : "");
}

function draw() {
  drawBest();
  drawHistory();
  drawCurves();
  drawImportances();
  drawTable();
}

async function reload() {
  try {
    data = await api("GET", data.api);
    draw();
  } catch (error) {
    document.getElementById("search-progress").textContent = `Could not update: ${error.message}`;
  }
  if (data.active) setTimeout(reload, RELOAD_MS);
}

draw();
if (data.active) setTimeout(reload, RELOAD_MS);
