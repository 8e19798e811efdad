// The group page: the validation loss and headline metric (its first model's
// task's: top-1 for classification) curves of every training job in the
// group overlaid, and a table of their settings and best metrics.
//
// A page has one live stream, and a job's curves travel only on that job's
// own stream (the shared stream carries statuses and progress), so this page
// cannot follow several jobs' curves live. Instead it fetches the group again
// every 5 s while any of its jobs is active, and at once when the shared
// stream says one of them changed status.
import { on, api } from "../js/live.js";
import { el, num, pct, progressBar } from "../js/format.js";
import { colour, legendAbove, plot } from "../js/charts.js";

const RELOAD_MS = 5000;
let data = JSON.parse(document.getElementById("group-data").textContent);

const at = (best, show) => (best ? `${show(best.value)} at epoch ${best.epoch.toFixed(2)}` : "—");
const share = (v) => pct(v, 2);

function traces(key) {
  return data.jobs.filter((job) => job.curves).map((job, i) => {
    const points = job.curves[key];
    return {
      type: "scatter", mode: "lines+markers", marker: { size: 4 }, name: job.name,
      line: { color: colour(i) }, x: points.map((p) => p[1]), y: points.map((p) => p[2]),
      hovertemplate: `${job.name}: %{y:.4g}<br>epoch %{x:.2f}<extra></extra>`,
    };
  });
}

function layout(axis) {
  return { height: 360, margin: { t: 12, r: 12, b: 44, l: 60 }, xaxis: { title: { text: "epoch" } }, yaxis: axis,
    legend: legendAbove(), uirevision: "keep" };
}

function draw() {
  plot("group-loss-chart", traces("val_loss"), layout({ title: { text: "loss" } }));
  const headline = data.headline;
  plot("group-headline-chart", traces(headline.series),
    layout({ title: { text: headline.label }, tickformat: ".0%", rangemode: "tozero" }));
  document.getElementById("group-empty").hidden = data.jobs.some((job) => job.curves && job.curves.val_loss.length);
  document.querySelector("#group-table tbody").replaceChildren(...data.jobs.map((job) => el("tr", { dataset: { job: job.id } },
    el("td", {}, el("a", { href: job.url }, job.name)),
    el("td", { class: `status ${job.status}` }, job.status_label),
    el("td", {}, job.network ?? job.kind),
    el("td", {}, job.solver ?? "—"),
    el("td", {}, num(job.lr)),
    el("td", {}, job.batch_size ?? "—"),
    el("td", {}, job.epochs ?? "—"),
    el("td", {}, at(job[`best_${headline.field}`], share)),
    el("td", {}, at(job.best_val_loss, num)),
    el("td", {}, progressBar(job.progress, job.status)))));
  document.getElementById("group-count").textContent = data.jobs.length;
  document.getElementById("group-live").textContent = data.active ? "updating every 5 s while a job is active" : "";
}

let timer = null;

async function reload() {
  clearTimeout(timer);
  try {
    data = await api("GET", data.api);
    draw();
  } catch (error) {
    document.getElementById("group-live").textContent = `Could not update: ${error.message}`;
  }
  if (data.active) timer = setTimeout(reload, RELOAD_MS);
}

on("status", (event) => {
  if (data.jobs.some((job) => job.id === event.job)) reload();
});

draw();
if (data.active) timer = setTimeout(reload, RELOAD_MS);
