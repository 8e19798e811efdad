// The New evaluation page: for the model chosen, only the sources its task
// takes, the options it takes (a detector's score threshold and label
// format) and its task's words for how a folder or an archive gives its
// labels. What each model's task takes comes from the server
// (its registration), so this names no task; the form refuses the rest.
const tasks = JSON.parse(document.getElementById("evaluation-model-tasks").textContent);
const form = document.getElementById("new-evaluation");
const OPTIONS = ["score_threshold", "label_format"];
const FILE_FIELDS = ["folder", "archive"];
const everyTask = Object.fromEntries(FILE_FIELDS.map((name) => [name, document.getElementById(`id_${name}_helptext`)?.textContent]));

function paragraph(name) {
  return document.getElementById(`id_${name}`)?.closest("p");
}

function show() {
  const chosen = tasks[form.elements.model.value];
  const source = form.elements.source;
  for (const option of source.options) {
    const refused = Boolean(chosen) && !chosen.sources.includes(option.value);
    option.hidden = refused;
    option.disabled = refused;
  }
  if (chosen && !chosen.sources.includes(source.value)) {
    source.value = chosen.sources.find((name) => name !== "split") ?? chosen.sources[0];
  }
  for (const name of OPTIONS) {
    const shown = paragraph(name);
    if (shown) shown.hidden = !chosen?.options.includes(name);
  }
  for (const name of FILE_FIELDS) {
    const help = document.getElementById(`id_${name}_helptext`);
    if (!help) continue;
    help.textContent = chosen ? `${chosen.labelled_files[0].toUpperCase()}${chosen.labelled_files.slice(1)}.` : everyTask[name];
  }
}

form.elements.model.addEventListener("change", show);
show();
