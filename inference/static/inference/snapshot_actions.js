// The snapshot choice of "Download model archive" and "Make pretrained
// model" on a model's page: snapshots join it as the run saves them, the
// best one first, then the newest.
import { on } from "../js/live.js";
import { el } from "../js/format.js";

const form = document.getElementById("snapshot-actions");
const choice = document.getElementById("snapshot-choice");
const best = choice.dataset.best;
const { kinds } = JSON.parse(document.getElementById("training-data").textContent);

function offer(file) {
  if (!file || [...choice.options].some((o) => o.value === file)) return;
  const option = el("option", { value: file }, file.split("/").pop());
  const first = choice.options[0];
  if (file === best || !first) choice.prepend(option);
  else choice.insertBefore(option, first.value === best ? first.nextSibling : first);
  form.hidden = false;
}

on(kinds.snapshot, (event) => offer(event.data.file));
on(kinds.best, () => offer(best));
