// Detect one: send the uploaded image to the model's detect API once, then
// draw the boxes over the image (an SVG whose viewBox is the image's own
// pixels, so the boxes scale with it), each in its class's colour with its
// name and score, and list them in the table. The score slider and the
// class toggles redraw from the answer kept here, without a new request.
import { colour, svg } from "../js/boxes.js";
import { el, fixed } from "../js/format.js";
import { csrfToken } from "../js/live.js";

const data = JSON.parse(document.getElementById("detect-data").textContent);
const $ = (id) => document.getElementById(id);
let answer = null; // the last answer: {width, height, boxes, ...}
let picture = null; // the object URL of the image shown


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
    ...[box.x1, box.y1, box.x2, box.y2].map((v) => el("td", {}, fixed(v, 1))));
}

// Only what the threshold and the toggles let through; called on every change.
function redraw() {
  const threshold = Number($("detect-threshold").value);
  $("detect-threshold-value").textContent = fixed(threshold, 2);
  if (!answer) return;
  const classes = shownClasses();
  const shown = answer.boxes.filter((box) => box.score >= threshold && classes.has(box.index));
  const fontSize = Math.max(answer.width, answer.height) / 32;
  $("detect-overlay")?.remove();
  $("detect-figure").append(svg("svg", { id: "detect-overlay", viewBox: `0 0 ${answer.width} ${answer.height}`,
    preserveAspectRatio: "none" }, ...shown.map((box) => drawBox(box, fontSize))));
  $("detect-table").tBodies[0].replaceChildren(...shown.map(row));
  $("detect-count").textContent = `${shown.length} of ${answer.boxes.length} boxes shown (every box scoring at least `
    + "0.05 was found; the slider and the classes choose which to show).";
}

function showAnswer(reply, file) {
  answer = reply;
  if (picture) URL.revokeObjectURL(picture);
  picture = URL.createObjectURL(file);
  $("detect-picture").src = picture;
  const note = $("detect-result-note");
  note.textContent = reply.note || "";
  note.hidden = !reply.note;
  $("detect-time").textContent = `Snapshot ${reply.snapshot} · ${reply.width}×${reply.height} image · `
    + `${fixed(reply.seconds * 1000, 1)} ms in the model server, ${fixed(reply.total_seconds * 1000, 1)} ms in all`
    + `${reply.loaded_now ? " (the model was loaded for this request)" : ""}.`;
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
    showAnswer(reply, file);
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
