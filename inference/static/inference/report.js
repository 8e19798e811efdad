// An evaluation's report on its job page: the accuracies, the confusion
// matrix (click a cell for its images), per-class figures, the mistakes by
// confidence, Top-N per class, and every image's top 5, paged and filtered.
// A report of boxes (detections) is boxes_report.js's, one of masks
// (segmentation) masks_report.js's; the files new images left out are
// listed for both. It loads when the
// evaluation's result event arrives (the page's stream
// replays it for a finished one).
import { plot } from "../js/charts.js";
import { el, isTerminal, pct } from "../js/format.js";
import { api, on } from "../js/live.js";
import { showBoxes, summaryItems as boxesSummary } from "./boxes_report.js";
import { showMasks, summaryItems as masksSummary } from "./masks_report.js";

const data = JSON.parse(document.getElementById("evaluation-data").textContent);
const PAGE_SIZE = 50;
const MISTAKES_PAGE = 48;
const CELL_IMAGES = 200;
// The largest count darkest; plotly's own "Blues" runs the other way.
const COUNT_SCALE = [[0, "#f7fbff"], [0.5, "#6baed6"], [1, "#08306b"]];
let report = null;
let page = 1;
let mistakesPage = 1;

const $ = (id) => document.getElementById(id);

function fetchRows(query) {
  return api("GET", `${data.rows_api}?${new URLSearchParams(query)}`);
}

function topText(row) {
  return row.top.length ? `${row.top[0].class} (${pct(row.top[0].probability)})` : row.error;
}

// The caption in full, wrapped: the true class, then what the model said.
function figure(row) {
  return el("figure", { class: row.outcome, dataset: { row: row.index } },
    row.image ? el("img", { src: row.image, alt: row.name, class: "pixelated" }) : null,
    el("figcaption", { title: row.name },
      row.label_name === null ? null : el("span", { class: "truth" }, `true ${row.label_name}`),
      el("span", { class: "said" }, row.top.length ? `predicted ${topText(row)}` : row.error)));
}

async function gallery(target, indices) {
  if (!indices.length) {
    target.replaceChildren(el("p", { class: "muted" }, "None."));
    return;
  }
  const found = await fetchRows({ rows: indices.join(","), size: indices.length });
  target.replaceChildren(...found.rows.map(figure));
}

function classificationItems() {
  // The server leaves top-5 out where it says nothing (five classes or fewer).
  const top5 = report.top5 === undefined ? [] : [["Top-5", pct(report.top5)]];
  return [["Top-1", pct(report.top1)], ...top5, ["Images", report.count],
    ["With a label", report.labelled], ["Unreadable", report.unreadable], ["Snapshot", report.snapshot]];
}

function showSummary(items) {
  $("evaluation-summary").replaceChildren(...items.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  $("evaluation-warnings").textContent = (report.warnings || []).join(" ");
  $("evaluation-waiting")?.remove();
  $("evaluation-report").hidden = false;
}

async function showCell(label, predicted) {
  const found = await fetchRows({ label, predicted, size: CELL_IMAGES });
  const names = report.classes;
  $("cell-title").textContent = `True ${names[label]}, predicted ${names[predicted]}: ${found.total} image(s)`;
  $("cell-images").replaceChildren(...found.rows.map(figure));
  $("cell").hidden = false;
}

function showConfusion() {
  if (!report.confusion) return;
  const names = report.classes;
  const chart = $("confusion-chart");
  plot(chart, [{
    type: "heatmap", z: report.confusion, x: names, y: names, colorscale: COUNT_SCALE, xgap: 1, ygap: 1,
    texttemplate: "%{z}", zmin: 0,
    hovertemplate: "true %{y}<br>predicted %{x}<br>%{z} image(s)<extra></extra>",
  }], {
    margin: { t: 10, l: 100, b: 80, r: 10 },
    xaxis: { title: { text: "Predicted" }, type: "category" },
    yaxis: { title: { text: "True" }, type: "category", autorange: "reversed" },
  });
  chart.on("plotly_click", (event) => {
    const point = event.points[0];
    showCell(names.indexOf(point.y), names.indexOf(point.x));
  });
  $("confusion").hidden = false;
}

function showPerClass() {
  if (!report.per_class.length) return;
  $("per-class-table").tBodies[0].replaceChildren(...report.per_class.map((c) => el("tr", {},
    el("td", {}, c.class), el("td", {}, c.count), el("td", {}, c.predicted), el("td", {}, pct(c.precision)),
    el("td", {}, pct(c.recall)), el("td", {}, pct(c.accuracy)))));
  $("per-class").hidden = false;
}

// A page of mistakes at a time, from the server: the page never loads all of them.
async function showMistakePage() {
  const found = await fetchRows({ list: "mistakes", page: mistakesPage, size: MISTAKES_PAGE });
  const pages = Math.max(1, Math.ceil(found.total / MISTAKES_PAGE));
  $("mistakes-images").replaceChildren(...(found.rows.length ? found.rows.map(figure) : [el("p", { class: "muted" }, "None.")]));
  $("mistakes-where").textContent = `page ${mistakesPage} of ${pages}`;
  $("mistakes-previous").disabled = mistakesPage <= 1;
  $("mistakes-next").disabled = mistakesPage >= pages;
}

function showMistakes() {
  if (!report.labelled) return;
  $("mistakes-count").textContent = report.mistakes_total > report.mistakes.length
    ? `The ${report.mistakes.length} most confident of ${report.mistakes_total} mistakes.`
    : `${report.mistakes_total} mistake(s).`;
  $("mistakes-previous").addEventListener("click", () => { mistakesPage -= 1; showMistakePage(); });
  $("mistakes-next").addEventListener("click", () => { mistakesPage += 1; showMistakePage(); });
  showMistakePage();
  $("mistakes").hidden = false;
}

function showTopN() {
  const select = $("top-n-class");
  select.replaceChildren(...report.classes.map((name, i) => el("option", { value: i }, name)));
  const show = () => {
    const lists = report.top_n.classes[Number(select.value)];
    gallery($("top-n-most"), lists.most);
    gallery($("top-n-least"), lists.least);
  };
  select.addEventListener("change", show);
  show();
  $("top-n").hidden = false;
}

function rowLine(row) {
  return el("tr", { class: row.outcome },
    el("td", {}, row.index),
    el("td", {}, row.image ? el("img", { src: row.image, alt: row.name, class: "pixelated thumb" }) : ""),
    el("td", {}, row.name),
    el("td", {}, row.label_name ?? ""),
    el("td", {}, row.top.length ? row.top.map((t) => `${t.class} ${pct(t.probability)}`).join(" · ") : row.error));
}

async function showRows() {
  const query = { page, size: PAGE_SIZE };
  for (const [key, id] of [["label", "filter-label"], ["predicted", "filter-predicted"], ["outcome", "filter-outcome"]]) {
    if ($(id).value !== "") query[key] = $(id).value;
  }
  const found = await fetchRows(query);
  const pages = Math.max(1, Math.ceil(found.total / PAGE_SIZE));
  $("rows-table").tBodies[0].replaceChildren(...found.rows.map(rowLine));
  $("rows-where").textContent = `page ${page} of ${pages} · ${found.total} image(s)`;
  $("rows-previous").disabled = page <= 1;
  $("rows-next").disabled = page >= pages;
}

function setUpRows() {
  for (const id of ["filter-label", "filter-predicted"]) {
    $(id).append(...report.classes.map((name, i) => el("option", { value: i }, name)));
  }
  for (const id of ["filter-label", "filter-predicted", "filter-outcome"]) {
    $(id).addEventListener("change", () => { page = 1; showRows(); });
  }
  $("rows-previous").addEventListener("click", () => { page -= 1; showRows(); });
  $("rows-next").addEventListener("click", () => { page += 1; showRows(); });
  showRows();
  $("rows").hidden = false;
}

// The files or lines of new labelled images the evaluation left out, with why.
function showSkipped() {
  if (!report.skipped?.length) return;
  $("skipped-count").textContent = `${report.skipped.length} file(s) or line(s) left out.`;
  $("skipped-table").tBodies[0].replaceChildren(...report.skipped.map((row) => el("tr", {},
    el("td", {}, row.file), el("td", {}, row.line ?? ""), el("td", {}, row.reason))));
  $("skipped-files").hidden = false;
}

async function load() {
  if (report) return;
  const found = await api("GET", data.report_api);
  if (!found.report || report) return;
  report = found.report;
  if (report.layout === "boxes") {
    showSummary(boxesSummary(report));
    showBoxes(report, data);
    showSkipped();
    return;
  }
  if (report.layout === "masks") {
    showSummary(masksSummary(report));
    showSkipped();
    await showMasks(report, data);
    return;
  }
  showSummary(classificationItems());
  showConfusion();
  showPerClass();
  showMistakes();
  showTopN();
  setUpRows();
}

on("result", load);
// A failed or aborted evaluation has no report to wait for.
on("status", (event) => { if (isTerminal(event.data.status) && event.data.status !== "done") $("evaluation-waiting")?.remove(); });
if (data.done) load();
