// New model form: show the fields that apply (what the chosen dataset's task
// takes, network source, the policy's parameters, momentum, GPUs, patience),
// describe the chosen standard network,
// copy it into an editor (Customize), list a network's layers (Visualize), and
// draw the learning rate curve as the fields change.
import { api } from "../js/live.js";
import { count, el, num } from "../js/format.js";
import { COLOURS, plot } from "../js/charts.js";

const form = document.getElementById("new-model");
const page = JSON.parse(document.getElementById("model-page-data").textContent);
const field = (name) => form.elements[name];
const row = (name) => form.querySelector(`p[data-field="${name}"]`);

function showRow(name, shown) {
  const p = row(name);
  if (p) p.hidden = !shown;
}

// Network source tabs.
function networkSource() {
  return form.querySelector("input[name=network_source]:checked")?.value || "standard";
}
function showNetwork() {
  for (const block of form.querySelectorAll("[data-network]")) block.hidden = block.dataset.network !== networkSource();
}
for (const radio of form.querySelectorAll("input[name=network_source]")) radio.addEventListener("change", showNetwork);

function chooseSource(source) {
  document.getElementById(`id_network_source_${source}`).checked = true;
  showNetwork();
}

// The chosen standard network: its label, intended input size and paper.
function showNetworkInfo() {
  const info = page.networks[field("standard_network").value];
  const box = document.getElementById("network-info");
  if (!info) { box.replaceChildren(); return; }
  const [h, w] = info.input_size;
  box.replaceChildren(el("p", {}, el("strong", {}, info.label), ` · designed for ${w}×${h} images · `,
    el("a", { href: info.paper_url, target: "_blank", rel: "noopener" }, "paper"), el("br"), info.summary));
}
field("standard_network").addEventListener("change", showNetworkInfo);

// Backbone weights: only for a network with a backbone (a detector's or a
// segmenter's), and only the pretrained models of the backbone's network.
function showBackbone() {
  const backbone = page.networks[field("standard_network").value]?.backbone;
  const select = field("backbone_model");
  showRow("backbone_model", Boolean(backbone));
  for (const option of select.options) {
    const model = page.pretrained.find((p) => String(p.id) === option.value);
    option.hidden = option.disabled = Boolean(model) && model.network.name !== backbone;
  }
  if (!backbone || select.selectedOptions[0]?.disabled) select.value = "";
}
field("standard_network").addEventListener("change", showBackbone);

// The chosen dataset's task: its networks, network sources, flips and
// presets alone; the options it refuses hidden and set back to off; the run
// options only some tasks' models take shown for those alone, blank otherwise.
function chosenTask() {
  return page.tasks[page.dataset_tasks[field("dataset").value]] || null;
}
function showTask() {
  const task = chosenTask();
  const note = document.getElementById("dataset-task");
  note.hidden = !task;
  note.textContent = task ? `A model for ${task.label.toLowerCase()}.` : "";
  for (const radio of form.querySelectorAll("input[name=network_source]")) {
    const offered = !task || task.sources.includes(radio.value);
    radio.closest("label").hidden = !offered;
    if (!offered && radio.checked) chooseSource("standard");
  }
  const networks = field("standard_network");
  for (const option of networks.options) {
    option.hidden = option.disabled = Boolean(task) && !task.networks.includes(option.value);
  }
  if (networks.selectedOptions[0]?.disabled) {
    networks.value = task.networks[0];
    showNetworkInfo();
    showBackbone();
  }
  for (const option of field("flip").options) {
    option.hidden = option.disabled = Boolean(task?.flips) && !task.flips.includes(option.value);
  }
  if (field("flip").selectedOptions[0]?.disabled) field("flip").value = "none";
  for (const [name, initial] of Object.entries(page.initials)) {
    const refused = Boolean(task?.refused.includes(name));
    if (refused) field(name).value = initial ?? "";
    showRow(name, !refused);
  }
  for (const name of page.run_options) {
    const taken = Boolean(task?.run_options.includes(name));
    if (!taken) field(name).value = "";
    showRow(name, taken);
  }
  for (const button of form.querySelectorAll("button[data-preset]")) {
    button.hidden = Boolean(task) && !task.presets.includes(button.dataset.preset);
  }
  // The search's choices: the task's networks and flips alone, the augmentation it refuses hidden and blank.
  for (const [name, offered] of [["search_networks", task?.networks], ["search_flips", task?.flips]]) {
    for (const option of field(name).options) {
      option.hidden = option.disabled = Boolean(offered) && !offered.includes(option.value);
      if (option.disabled) option.selected = false;
    }
  }
  for (const [name, searchField] of Object.entries(page.search_choices)) {
    const refused = Boolean(task?.refused.includes(name));
    if (refused) field(searchField).value = "";
    showRow(searchField, !refused);
  }
  showCustomize();
}
field("dataset").addEventListener("change", showTask);

const networkError = document.getElementById("network-error");
function showNetworkError(message) {
  networkError.textContent = message;
  networkError.hidden = !message;
}

const customizeButton = document.getElementById("customize");
function showCustomize() {
  customizeButton.closest("p").hidden = !page.customizable.includes(field("standard_network").value);
}
field("standard_network").addEventListener("change", showCustomize);
customizeButton.addEventListener("click", async () => {
  const name = field("standard_network").value;
  try {
    const copy = await api("GET", `${page.urls.customize}?name=${encodeURIComponent(name)}`);
    if (copy.source === "python" && !page.may_run_code) {
      showNetworkError(`${page.networks[name].label} is written in Python here, and only users allowed to run code may use Python networks.`);
      return;
    }
    const editor = field(`${copy.source}_text`);
    if (editor.value.trim() && editor.value !== copy.text && !confirm("Replace what the editor holds?")) return;
    editor.value = copy.text;
    showNetworkError("");
    chooseSource(copy.source);
    editor.focus();
  } catch (e) {
    showNetworkError(e.message);
  }
});

// Previous network: the chosen model's snapshots.
const previousJob = field("previous_job");
const previousSnapshot = field("previous_snapshot");
function previousModel() {
  return page.previous.find((p) => String(p.id) === previousJob?.value);
}
function showSnapshots() {
  const chosen = previousModel();
  const keep = previousSnapshot.value;
  const files = chosen ? chosen.snapshots : [];
  const best = page.files.best_checkpoint;
  previousSnapshot.replaceChildren(...files.map((f) => el("option", { value: f }, f.replace(`${page.files.checkpoints}/`, ""))));
  if (files.includes(keep)) previousSnapshot.value = keep;
  else if (files.length) previousSnapshot.value = files.includes(best) ? best : files[files.length - 1];
}
if (previousJob) previousJob.addEventListener("change", showSnapshots);

// Visualize: the layer table of the network as it would be built.
function networkSpec() {
  const source = networkSource();
  if (source === "standard") return { source, name: field("standard_network").value };
  if (source === "layers" || source === "python") return { source, text: field(`${source}_text`).value };
  if (source === "pretrained") {
    const pretrained = page.pretrained.find((p) => String(p.id) === field("pretrained_model")?.value);
    if (!pretrained) throw new Error("Choose a pretrained model first.");
    return pretrained.network;
  }
  const chosen = previousModel();
  if (!chosen) throw new Error("Choose a previous model first.");
  return chosen.network;
}

function layerTable(answer) {
  const { summary } = answer;
  const [c, h, w] = answer.input;
  const table = el("table", { class: "grid compact", id: "layers" },
    el("thead", {}, el("tr", {}, el("th", {}, "Layer"), el("th", {}, "Type"), el("th", {}, "Output shape"),
      el("th", { class: "number" }, "Parameters"))),
    el("tbody", {}, summary.layers.map((layer) => el("tr", {},
      el("td", {}, el("code", {}, layer.name)), el("td", {}, layer.type), el("td", {}, `${layer.output_shape.join("×")}`),
      el("td", { class: "number" }, count(layer.params))))));
  const flops = summary.flops_per_image ? ` · ${(summary.flops_per_image / 1e6).toFixed(1)} MFLOPs per image` : "";
  return [el("p", { id: "network-totals" }, `Input ${c}×${h}×${w}, ${answer.classes} classes · `,
    el("strong", {}, `${count(summary.params)} parameters`), ` (${count(summary.trainable)} trainable)${flops}`), table];
}

const visualizeButton = document.getElementById("visualize");
visualizeButton.addEventListener("click", async () => {
  const holder = document.getElementById("network-table");
  holder.replaceChildren();
  showNetworkError("");
  const crop = parseInt(field("crop").value, 10);
  visualizeButton.disabled = true;
  visualizeButton.textContent = "Building…";
  try {
    const answer = await api("POST", page.urls.visualize, {
      network: networkSpec(), dataset: parseInt(field("dataset").value, 10) || null, crop: Number.isNaN(crop) ? null : crop,
    });
    holder.replaceChildren(...layerTable(answer));
  } catch (e) {
    showNetworkError(e.message);
  } finally {
    visualizeButton.disabled = false;
    visualizeButton.textContent = "Visualize";
  }
});

// Fields that only some choices use.
const POLICY_FIELDS = ["step_percent", "gamma", "milestones_percent", "power", "warmup_percent", "start_factor", "peak_percent",
  "end_factor"];
function showSolver() {
  showRow("momentum", page.momentum.includes(field("solver").value));
}
function showPolicy() {
  const used = page.policies[field("lr_policy").value] || [];
  for (const name of POLICY_FIELDS) showRow(name, used.includes(name));
}
function showDevices() {
  const gpu = field("device").value === "gpu";
  showRow("gpu_count", gpu);
  showRow("gpu_ids", gpu);
  showRow("scale_lr", gpu);
}
function showPatience() {
  showRow("patience", field("early_stopping").value !== "none");
}
function showAveraging() {
  const averaging = field("averaging").value !== "none";
  showRow("average_decay", averaging);
  showRow("average_every", averaging);
}
field("solver").addEventListener("change", showSolver);
field("lr_policy").addEventListener("change", () => {
  // Each policy starts from its own defaults (exp's gamma is per 1% of training, step's per step); the warmup stays.
  for (const [name, value] of Object.entries(page.policy_defaults[field("lr_policy").value] || {})) {
    if (name !== "warmup_percent") field(name).value = Array.isArray(value) ? value.join(", ") : value;
  }
  showPolicy();
});
field("device").addEventListener("change", showDevices);
field("early_stopping").addEventListener("change", showPatience);
field("averaging").addEventListener("change", showAveraging);

// Presets: fill in their fields, then let each field's own change handler run
// (the policy's sets its parameters to the policy's defaults, which a preset's follow).
for (const button of form.querySelectorAll("button[data-preset]")) {
  button.addEventListener("click", () => {
    const fields = page.presets[button.dataset.preset].fields;
    for (const [name, value] of Object.entries(fields)) {
      if (name === "network_source") chooseSource(value);
      else field(name).value = value;
    }
    for (const name of Object.keys(fields)) {
      if (name !== "network_source") field(name).dispatchEvent(new Event("change", { bubbles: true }));
    }
    for (const [name, value] of Object.entries(fields)) {
      if (name !== "network_source") field(name).value = value;
    }
  });
}

// The learning rate preview and the effective rate on several GPUs.
const PREVIEW_FIELDS = ["lr", "lr_policy", ...POLICY_FIELDS, "epochs",
  "batch_size", "batch_schedule", "dataset", "device", "gpu_count", "gpu_ids", "nodes"];
const lrChart = document.getElementById("lr-chart");
const lrError = document.getElementById("lr-error");
let previewTimer = null;
let previewSeq = 0;

function effectiveLine(answer) {
  const base = parseFloat(field("lr").value);
  const n = answer.world_size;
  const line = document.getElementById("effective-lr");
  const effective = `Effective learning rate: ${num(answer.effective_lr)}`;
  if (n <= 1) line.textContent = effective;
  else if (field("scale_lr").checked) line.textContent = `${effective} (${num(base)} × ${n} GPUs), warmup ≥${answer.warmup_percent}%`;
  else line.textContent = `${effective} (not scaled for ${n} GPUs)`;
}

async function preview() {
  const body = Object.fromEntries(PREVIEW_FIELDS.map((name) => [name, field(name).value]));
  body.scale_lr = field("scale_lr").checked;
  const seq = ++previewSeq;
  try {
    const answer = await api("POST", page.urls.lr_preview, body);
    if (seq !== previewSeq) return;
    lrError.hidden = true;
    plot(lrChart, [{
      x: answer.points.map((p) => p[0]), y: answer.points.map((p) => p[1]), mode: "lines", name: "learning rate",
      line: { color: COLOURS[0] },
    }], {
      height: 260, margin: { t: 12, r: 12, b: 40, l: 64 }, showlegend: false,
      xaxis: { title: { text: `step (of ${count(answer.total_steps)})` } }, yaxis: { title: { text: "learning rate" }, exponentformat: "e" },
    });
    document.getElementById("lr-description").textContent = answer.description;
    const warning = document.getElementById("steps-warning");
    warning.textContent = answer.warning || "";
    warning.hidden = !answer.warning;
    effectiveLine(answer);
  } catch (e) {
    if (seq !== previewSeq) return;
    lrError.textContent = e.message;
    lrError.hidden = false;
  }
}
function schedulePreview() {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(preview, 250);
}
for (const name of [...PREVIEW_FIELDS, "scale_lr"]) {
  field(name).addEventListener("input", schedulePreview);
  field(name).addEventListener("change", schedulePreview);
}

showNetwork();
showNetworkInfo();
showTask();
showBackbone();
if (previousJob) showSnapshots();
showSolver();
showPolicy();
showDevices();
showPatience();
showAveraging();
preview();
