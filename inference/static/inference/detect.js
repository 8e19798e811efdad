// Detect one: send the uploaded image to the model's detect API once, then
// draw the boxes over the image (an SVG whose viewBox is the image's own
// pixels, so the boxes scale with it), each in its class's colour with its
// name and score, and list them in the table. The score slider and the
// class toggles redraw from the answer kept here, without a new request.
// A model that finds masks too (instance segmentation) answers with each
// pixel's object as a PNG (`instances`): each object shown is filled in its
// class's colour on a canvas under the boxes, its outline drawn solid.
import { colour, svg } from "../js/boxes.js";
import { el, fixed } from "../js/format.js";
import { csrfToken } from "../js/live.js";
import { drawIndices, indicesOf, outlines, rgbOf } from "../js/masks.js";

const data = JSON.parse(document.getElementById("detect-data").textContent);
const $ = (id) => document.getElementById(id);
let answer = null; // the last answer: {width, height, boxes, ...}
let picture = null; // the object URL of the image shown
let objects = null; // with masks: each pixel's object (its box's place + 1, 0 none), and where outlines run

const FILL_ALPHA = 100;

// The objects of the boxes shown, on the canvas under the boxes.
function drawObjects(shown) {
  $("detect-masks")?.remove();
  if (!objects) return;
  const canvas = el("canvas", { id: "detect-masks", width: answer.width, height: answer.height });
  const table = new Array(256).fill(null);
  for (const box of shown) table[answer.boxes.indexOf(box) + 1] = rgbOf(colour(box.index));
  drawIndices(canvas, objects.indices, table, FILL_ALPHA, objects.edge);
  $("detect-picture").after(canvas);
  canvas.dataset.objects = String(shown.length);
}


function messages(reply) {
  if (!reply.errors) return reply.error;
  return Object.values(reply.errors).flat().map((m) => (typeof m === "string" ? m : m.message)).join(" ");
}

function shownClasses() {
  return new Set([...document.querySelectorAll("#detect-classes input[data-class]")]
    .filter((toggle) => toggle.checked).map((toggle) => Number(toggle.dataset.class)));
}

function drawBox(box, fontSize) {
  const group = svg("g", { class: "box", "data-class": box.index });
  group.append(svg("rect", {
    x: box.x1, y: box.y1, width: box.x2 - box.x1, height: box.y2 - box.y1, stroke: colour(box.index),
    "stroke-width": 2, "vector-effect": "non-scaling-stroke", fill: "none",
  }));
  group.append(svg("text", { x: box.x1, y: Math.max(box.y1, fontSize), fill: colour(box.index), "font-size": fontSize,
    "paint-order": "stroke", stroke: "#fff", "stroke-width": fontSize / 6 }, `${box.class} ${fixed(box.score, 2)}`));
  return group;
}

function row(box) {
  const swatch = el("span", { class: "swatch" });
  swatch.style.background = colour(box.index);
  return el("tr", { "data-class": box.index }, el("td", {}, swatch, ` ${box.class}`), el("td", {}, fixed(box.score, 3)),
    ...[box.x1, box.y1, box.x2, box.y2].map((v) => el("td", {}, fixed(v, 1))),
    ...(box.pixels === undefined ? [] : [el("td", {}, String(box.pixels))]));
}

// Only what the threshold and the toggles let through; called on every change.
function redraw() {
  const threshold = Number($("detect-threshold").value);
  $("detect-threshold-value").textContent = fixed(threshold, 2);
  if (!answer) return;
  const classes = shownClasses();
  const shown = answer.boxes.filter((box) => box.score >= threshold && classes.has(box.index));
  const fontSize = Math.max(answer.width, answer.height) / 32;
  drawObjects(shown);
  $("detect-overlay")?.remove();
  $("detect-figure").append(svg("svg", { id: "detect-overlay", viewBox: `0 0 ${answer.width} ${answer.height}`,
    preserveAspectRatio: "none" }, ...shown.map((box) => drawBox(box, fontSize))));
  $("detect-table").tBodies[0].replaceChildren(...shown.map(row));
  $("detect-count").textContent = `${shown.length} of ${answer.boxes.length} boxes shown (every box scoring at least `
    + "0.05 was found; the slider and the classes choose which to show).";
}

async function showAnswer(reply, file) {
  answer = reply;
  objects = null;
  if (reply.instances) {
    const indices = await indicesOf(`data:image/png;base64,${reply.instances}`, reply.width, reply.height);
    objects = { indices, edge: outlines(indices, reply.width, reply.height) };
  }
  if (picture) URL.revokeObjectURL(picture);
  picture = URL.createObjectURL(file);
  $("detect-picture").src = picture;
  const note = $("detect-result-note");
  note.textContent = reply.note || "";
  note.hidden = !reply.note;
  $("detect-time").textContent = `Snapshot ${reply.snapshot} · ${reply.width}×${reply.height} image · `
    + `${fixed(reply.seconds * 1000, 1)} ms in the model server, ${fixed(reply.total_seconds * 1000, 1)} ms in all`
    + `${reply.loaded_now ? " (the model was loaded for this request)" : ""}.`;
  $("detect-pixels-head").hidden = !objects;
  $("detect-result").hidden = false;
  redraw();
}

async function detect(event) {
  event.preventDefault();
  const file = $("detect-image").files[0];
  if (!file) {
    $("detect-status").textContent = "Choose an image first.";
    return;
  }
  const body = new FormData();
  body.append("image", file);
  body.append("snapshot", $("detect-snapshot").value);
  $("detect-status").textContent = "Detecting…";
  $("detect-button").disabled = true;
  try {
    const response = await fetch(data.api, {
      method: "POST", body, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() },
    });
    const reply = await response.json();
    if (!response.ok) throw new Error(messages(reply) || `HTTP ${response.status}`);
    $("detect-status").textContent = "";
    await showAnswer(reply, file);
  } catch (error) {
    $("detect-status").textContent = error.message;
  } finally {
    $("detect-button").disabled = false;
  }
}

for (const swatch of document.querySelectorAll("#detect-classes .swatch")) {
  swatch.style.background = colour(Number(swatch.dataset.class));
}
for (const toggle of document.querySelectorAll("#detect-classes input[data-class]")) {
  toggle.style.accentColor = colour(Number(toggle.dataset.class));
  toggle.addEventListener("change", redraw);
}
$("detect-threshold").addEventListener("input", redraw);
// The button is sent disabled: a click before this script ran would submit the form to the page itself.
$("detect-form").addEventListener("submit", detect);
$("detect-button").disabled = false;
