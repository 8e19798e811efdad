// The snapshots table, the best one starred, and the model download: the
// best snapshot, else the newest that still exists.
import { count, el, fixed, isNumber, num, pct } from "../../js/format.js";
import { data, fileUrl, metrics } from "./page.js";

function bestStep() {
  if (data.best && isNumber(data.best.step)) return data.best.step;
  const marked = data.snapshots.filter((s) => s.best);
  return marked.length ? marked[marked.length - 1].step : null;
}

export function showSnapshots() {
  const body = document.querySelector("#snapshots-table tbody");
  const best = bestStep();
  body.replaceChildren(...data.snapshots.map((s) => {
    const m = s.metrics || {};
    const file = s.file && s.exists !== false
      ? el("a", { href: fileUrl(s.file), download: "" }, s.file.split("/").pop())
      : el("span", { class: "muted" }, s.file ? "removed" : "—");
    return el("tr", { class: s.step === best ? "best" : "" },
      el("td", {}, fixed(s.epoch)), el("td", {}, count(s.step)), el("td", {}, num(m.val_loss)),
      ...metrics.map((metric) => el("td", {}, pct(m[metric.series]))), el("td", {}, num(m.train_loss)),
      el("td", {}, s.step === best ? "★ best" : ""), el("td", {}, file));
  }));
  document.getElementById("snapshots").hidden = data.snapshots.length === 0;
  const candidates = [data.best && data.best.file, ...data.snapshots.filter((s) => s.exists !== false).map((s) => s.file).reverse()];
  const model = candidates.find((f) => f);
  const link = document.getElementById("download-model");
  if (model) link.href = fileUrl(model);
  link.hidden = !model;
}
