// Compare on a group page: the evaluations a Compare queued, one row per
// model and split, filled in as they finish (polled while one is active).
import { el, isTerminal, pct, percent, statusLabel } from "../js/format.js";
import { api } from "../js/live.js";

const section = document.getElementById("compare");
const POLL_MS = 3000;

function line(row) {
  const status = isTerminal(row.status) ? statusLabel(row.status) : `${statusLabel(row.status)} ${percent(row.progress)}`;
  return el("tr", { dataset: { evaluation: row.id } },
    el("td", {}, row.name), el("td", {}, row.split), el("td", {}, row.snapshot ?? ""),
    el("td", { class: "status" }, status), el("td", {}, row.count ?? ""),
    el("td", { class: "top1" }, pct(row.top1)), el("td", { class: "top5" }, pct(row.top5)),
    el("td", {}, el("a", { href: row.url }, "report")));
}

async function refresh() {
  const found = await api("GET", section.dataset.api);
  document.querySelector("#compare-table tbody").replaceChildren(...found.evaluations.map(line));
  document.getElementById("compare-empty").hidden = found.evaluations.length > 0;
  if (found.evaluations.some((row) => !isTerminal(row.status))) setTimeout(refresh, POLL_MS);
}

refresh();
