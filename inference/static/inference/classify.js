// Classify one: send the chosen image (an upload, one of the dataset's, or
// a file on the server) to the model's classify API and show the top 5, the
// input as the network saw it, and, when asked, every layer and where the
// network looked. Histograms are drawn when a layer is opened.
import { plot } from "../js/charts.js";
import { count, el, fixed, num, pct } from "../js/format.js";
import { csrfToken } from "../js/live.js";

const data = JSON.parse(document.getElementById("classify-data").textContent);
const $ = (id) => document.getElementById(id);
let picked = null; // {split, index} of a dataset image

function pick(button) {
  for (const other of document.querySelectorAll("#classify-gallery .pick")) other.setAttribute("aria-pressed", "false");
  picked = button ? { split: button.dataset.split, index: button.dataset.index } : null;
  if (button) {
    button.setAttribute("aria-pressed", "true");
    $("classify-image").value = "";
    $("classify-path").value = "";
  }
}

function input() {
  const body = new FormData();
  const file = $("classify-image").files[0];
  if (file) body.append("image", file);
  else if (picked) {
    body.append("split", picked.split);
    body.append("index", picked.index);
  } else if ($("classify-path").value.trim()) body.append("path", $("classify-path").value.trim());
  body.append("snapshot", $("classify-snapshot").value);
  return body;
}

function messages(answer) {
  if (!answer.errors) return answer.error;
  return Object.values(answer.errors).flat().map((m) => (typeof m === "string" ? m : m.message)).join(" ");
}

async function ask(body) {
  const response = await fetch(data.api, {
    method: "POST", body, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() },
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(messages(answer) || `HTTP ${response.status}`);
  return answer;
}

function showTop(answer) {
  const top = [...answer.top].reverse();
  plot($("classify-chart"), [{
    type: "bar", orientation: "h", x: top.map((t) => t.probability), y: top.map((t) => t.class),
    text: top.map((t) => pct(t.probability)), textposition: "auto", hovertemplate: "%{y}: %{x:.2%}<extra></extra>",
  }], { margin: { l: 120, r: 20, t: 10, b: 40 }, xaxis: { range: [0, 1], tickformat: ".0%" } });
  $("classify-seen").src = answer.seen;
  const note = $("classify-result-note");
  note.textContent = answer.note || "";
  note.hidden = !answer.note;
  $("classify-time").textContent = `Snapshot ${answer.snapshot} · ${fixed(answer.seconds * 1000, 1)} ms in the model server, `
    + `${fixed(answer.total_seconds * 1000, 1)} ms in all${answer.loaded_now ? " (the model was loaded for this request)" : ""}.`;
  $("classify-result").hidden = false;
}

// The layer list comes with each map: every convolution with its output's size.
function showSaliency(saliency) {
  $("saliency-image").src = saliency.image;
  $("saliency-class").value = String(saliency.index);
  $("saliency-layer").replaceChildren(...saliency.layers.map((layer) =>
    el("option", { value: layer.name }, `${layer.name} (${layer.size.join("×")})`)));
  $("saliency-layer").value = saliency.layer;
  $("saliency-caption").textContent = `Where the network looked for ${saliency.class}, computed at ${saliency.layer} `
    + `(${saliency.size.join("×")}, upsampled to the input): red most, blue least.`;
  $("classify-saliency").hidden = false;
}

function histogram(node, histogramData, title) {
  const { edges, counts } = histogramData;
  const centres = counts.map((_, i) => (edges[i] + edges[i + 1]) / 2);
  plot(node, [{ type: "bar", x: centres, y: counts, marker: { line: { width: 0 } } }],
    { title: { text: title, font: { size: 13 } }, bargap: 0, margin: { l: 40, r: 10, t: 30, b: 30 } });
}

function stats(name, values) {
  return el("p", { class: "muted" }, `${name}: mean ${num(values.mean)}, standard deviation ${num(values.std)}`);
}

function layerPanel(layer) {
  const shape = layer.output_shape ? layer.output_shape.join("×") : "–";
  const panel = el("details", { class: "layer-panel" },
    el("summary", {}, el("strong", {}, layer.name), ` ${layer.type} · output ${shape} · ${count(layer.params)} parameters`));
  const body = el("div", { class: "layer-body" });
  panel.append(body);
  panel.addEventListener("toggle", () => {
    if (!panel.open || body.childElementCount) return;
    const activations = el("div", {}, el("h3", {}, "Activations"));
    if (layer.activations) activations.append(el("img", { src: layer.activations, class: "pixelated tiles", alt: `${layer.name} activations` }));
    if (layer.activation_stats) {
      const chart = el("div", { class: "chart tiny" });
      activations.append(stats("Activations", layer.activation_stats), chart);
      body.append(activations);
      histogram(chart, layer.activation_stats.histogram, "Activations");
    } else body.append(activations);
    if (layer.weights) {
      const weights = el("div", {}, el("h3", {}, `Weights ${layer.weights.shape.join("×")}`));
      if (layer.weights.filters) weights.append(el("img", { src: layer.weights.filters, class: "pixelated tiles", alt: `${layer.name} filters` }));
      const chart = el("div", { class: "chart tiny" });
      weights.append(stats("Weights", layer.weights), chart);
      body.append(weights);
      histogram(chart, layer.weights.histogram, "Weights");
    }
  });
  return panel;
}

function showLayers(answer) {
  $("layers-total").textContent = `${answer.layers.length} layers · ${count(answer.params)} parameters`
    + (answer.trainable !== answer.params ? ` (${count(answer.trainable)} trainable)` : "");
  $("layer-panels").replaceChildren(...answer.layers.map(layerPanel));
  $("classify-layers").hidden = false;
}

async function classify(event) {
  event.preventDefault();
  const body = input();
  if (!body.has("image") && !body.has("index") && !body.has("path")) {
    $("classify-status").textContent = "Choose an image first.";
    return;
  }
  const visualize = $("classify-visualize").checked;
  body.append("visualize", visualize ? "true" : "false");
  $("classify-status").textContent = "Classifying…";
  $("classify-button").disabled = true;
  try {
    const answer = await ask(body);
    $("classify-status").textContent = "";
    showTop(answer);
    $("classify-saliency").hidden = !answer.saliency;
    $("classify-layers").hidden = !answer.layers;
    if (answer.saliency) showSaliency(answer.saliency);
    if (answer.layers) showLayers(answer);
  } catch (error) {
    $("classify-status").textContent = error.message;
  } finally {
    $("classify-button").disabled = false;
  }
}

async function saliencyFor() {
  const body = input();
  body.append("class", $("saliency-class").value);
  body.append("layer", $("saliency-layer").value);
  $("saliency-caption").textContent = "Looking…";
  try {
    showSaliency((await ask(body)).saliency);
  } catch (error) {
    $("saliency-caption").textContent = error.message;
  }
}

// The button is sent disabled: a click before this script ran would submit the form to the page itself.
$("classify-form").addEventListener("submit", classify);
$("classify-button").disabled = false;
$("saliency-class").addEventListener("change", saliencyFor);
$("saliency-layer").addEventListener("change", saliencyFor);
$("classify-image").addEventListener("change", () => {
  pick(null);
  $("classify-path").value = "";
});
$("classify-path").addEventListener("input", () => {
  pick(null);
  $("classify-image").value = "";
});
for (const button of document.querySelectorAll("#classify-gallery .pick")) button.addEventListener("click", () => pick(button));
