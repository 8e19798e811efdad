// What the panels share: the training data the server embedded in the page
// (its curves downsampled), which section.js keeps current as events arrive
// and every panel draws from, and the few ways panels fill the page.
import { el } from "../../js/format.js";

export const data = JSON.parse(document.getElementById("training-data").textContent);

// Top-5 accuracy says nothing with five classes or fewer (it is always
// 100%), so the charts, the snapshots and the result leave it out then.
const TOP5_CLASSES = 5;
export const showTop5 = !(typeof data.classes === "number" && data.classes <= TOP5_CLASSES);

export const fileUrl = (path) => data.files_url + path.split("/").map(encodeURIComponent).join("/");

export function show(id) {
  const node = document.getElementById(id);
  if (node.hidden) node.hidden = false;
}

// A definition list of [term, value] rows, leaving out rows with no value.
export function fillList(list, rows) {
  list.replaceChildren(...rows.filter(([, v]) => v !== null && v !== undefined).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}
