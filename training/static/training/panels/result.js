// The run's result: its best metric, final validation and test metrics,
// time and throughput, whether it stopped early, and for a task that
// reports them, each class's scores on each split at the end.
import { duration, el, fixed, isNumber, num, pct } from "../../js/format.js";
import { data, fillList, metrics } from "./page.js";

const METRIC_LABELS = { val_loss: "val loss", train_loss: "train loss",
  ...Object.fromEntries(metrics.map((metric) => [metric.series, `val ${metric.label}`])) };

function metricValue(name, value) {
  return name && name.endsWith("loss") ? num(value) : pct(value);
}

const SPLIT_LABELS = { val: "validation", test: "test" };

// One row a class, and for each of the task's class metrics a column a split.
function showPerClass(perClass) {
  const splits = Object.keys(perClass).filter((split) => perClass[split].length);
  const columns = data.class_metrics.flatMap((metric) => splits.map((split) => [metric, split]));
  document.getElementById("training-per-class").hidden = !splits.length || !columns.length;
  if (!splits.length || !columns.length) return;
  const table = document.getElementById("training-per-class-table");
  table.tHead.replaceChildren(el("tr", {}, el("th", {}, "Class"),
    ...columns.map(([metric, split]) => el("th", {}, `${metric.label} (${SPLIT_LABELS[split] || split})`))));
  table.tBodies[0].replaceChildren(...perClass[splits[0]].map((row, index) => el("tr", {}, el("td", {}, row.class),
    ...columns.map(([metric, split]) => el("td", { dataset: { field: metric.field, split } },
      pct(perClass[split][index]?.[metric.field]))))));
}

export function showResult() {
  const r = data.result;
  document.getElementById("training-result").hidden = !r;
  // The trainer exports the model before it reports its result.
  if (r) document.getElementById("download-export").hidden = false;
  if (!r) return;
  const best = r.best || {};
  const final = r.final || {};
  const measured = (prefix) => [["loss", "loss", num], ...metrics.map((metric) => [metric.field, metric.label, pct])]
    .filter(([field]) => isNumber(final[`${prefix}_${field}`]))
    .map(([field, label, format]) => `${label} ${format(final[`${prefix}_${field}`])}`)
    .join(" · ");
  fillList(document.getElementById("training-result-list"), [
    ["Best", best.metric ? `${METRIC_LABELS[best.metric] || best.metric} ${metricValue(best.metric, best.value)} at epoch ${fixed(best.epoch)}` : null],
    ["Final validation", measured("val") || null],
    ["Test", measured("test") || null],
    ["Epochs", isNumber(r.epochs) ? fixed(r.epochs) : null],
    ["Training time", isNumber(r.train_seconds) ? duration(r.train_seconds) : null],
    // The trainer's images trained over its training seconds, both summed
    // over every attempt after the warm-up's batches; validation, snapshots
    // and the start leave no time in them.
    ["Images/s, whole run", isNumber(r.images_per_s)
      ? `${num(r.images_per_s, 5)} (training steps after the warm-up, averaged over the run; validation and start-up left out)`
      : null],
    ["Stopped early", r.stopped_early ? "yes, the metric stopped improving" : "no"],
  ]);
  showPerClass(r.per_class || {});
}
