// Compare on a group page: the evaluations a Compare queued, one row per
// model and split, filled in as they finish (polled while one is active),
// with the metrics of the group's task (its top-1 and top-5, its mAPs…).
import { el, isTerminal, pct, percent, statusLabel } from "../js/format.js";
import { api } from "../js/live.js";

const section = document.getElementById("compare");
const POLL_MS = 3000;
const metrics = JSON.parse(document.getElementById("compare-metrics").textContent);

function line(row) {
  const status = isTerminal(row.status) ? statusLabel(row.status) : `${statusLabel(row.status)} ${percent(row.progress)}`;
  return el("tr", { dataset: { evaluation: row.id } },
    el("td", {}, row.name), el("td", {}, row.split), el("td", {}, row.snapshot ?? ""),
    el("td", { class: "status" }, status), el("td", {}, row.count ?? ""),
    ...metrics.map((metric) => el("td", { class: metric.field }, pct(row[metric.field]))),
    el("td", {}, el("a", { href: row.url }, "report")));
}

async function refresh() {
  const found = await api("GET", section.dataset.api);
  document.querySelector("#compare-table tbody").replaceChildren(...found.evaluations.map(line));
  document.getElementById("compare-empty").hidden = found.evaluations.length > 0;
  if (found.evaluations.some((row) => !isTerminal(row.status))) setTimeout(refresh, POLL_MS);
}

refresh();
