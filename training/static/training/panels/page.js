// What the panels share: the training data the server embedded in the page
// (its curves downsampled), which section.js keeps current as events arrive
// and every panel draws from, and the few ways panels fill the page.
import { el } from "../../js/format.js";

export const data = JSON.parse(document.getElementById("training-data").textContent);

// The task's validation metrics this run shows (shares, higher is better:
// {field, label, series}), chosen by the server for the dataset (top-5 says
// nothing with five classes or fewer); the charts, the snapshots and the
// result show these.
export const metrics = data.metrics;

export const fileUrl = (path) => data.files_url + path.split("/").map(encodeURIComponent).join("/");

export function show(id) {
  const node = document.getElementById(id);
  if (node.hidden) node.hidden = false;
}

// A definition list of [term, value] rows, leaving out rows with no value.
export function fillList(list, rows) {
  list.replaceChildren(...rows.filter(([, v]) => v !== null && v !== undefined).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}
