// Segment one: send the uploaded image to the model's segment API once, then
// draw the mask it answers (a grayscale PNG of class indices, 255 where the
// network saw no pixel) over the image on a canvas of the image's own size,
// each class in its colour, and list the classes found with their pixels.
// The opacity slider and the class toggles redraw from the indices kept here.
import { el, fixed } from "../js/format.js";
import { csrfToken } from "../js/live.js";
import { alphaOf, drawIndices, indicesOf, rgbOf } from "../js/masks.js";

const data = JSON.parse(document.getElementById("segment-data").textContent);
const $ = (id) => document.getElementById(id);
const rgb = data.colours.map(rgbOf);
let answer = null; // the last answer, with its mask's class indices as `indices`
let picture = null; // the object URL of the image shown

function messages(reply) {
  if (!reply.errors) return reply.error;
  return Object.values(reply.errors).flat().map((m) => (typeof m === "string" ? m : m.message)).join(" ");
}

function redraw() {
  if (!answer) return;
  const table = new Array(256).fill(null);
  for (const toggle of document.querySelectorAll("#segment-classes input[data-class]")) {
    if (toggle.checked) table[Number(toggle.dataset.class)] = rgb[Number(toggle.dataset.class)] ?? null;
  }
  drawIndices($("segment-mask"), answer.indices, table, alphaOf($("segment-opacity")));
}

function row(found, total) {
  const swatch = el("span", { class: "swatch" });
  swatch.style.background = data.colours[found.index];
  return el("tr", { "data-class": found.index }, el("td", {}, swatch, ` ${found.class}`),
    el("td", {}, found.pixels.toLocaleString()), el("td", {}, `${fixed((100 * found.pixels) / total, 1)}%`));
}

async function showAnswer(reply, file) {
  reply.indices = await indicesOf(`data:image/png;base64,${reply.mask}`, reply.width, reply.height);
  answer = reply;
  if (picture) URL.revokeObjectURL(picture);
  picture = URL.createObjectURL(file);
  $("segment-picture").src = picture;
  const canvas = $("segment-mask");
  canvas.width = reply.width;
  canvas.height = reply.height;
  const note = $("segment-result-note");
  note.textContent = reply.note || "";
  note.hidden = !reply.note;
  const total = reply.width * reply.height;
  $("segment-table").tBodies[0].replaceChildren(...reply.classes.map((found) => row(found, total)));
  $("segment-time").textContent = `Snapshot ${reply.snapshot} · ${reply.width}×${reply.height} image · `
    + `${fixed(reply.seconds * 1000, 1)} ms in the model server, ${fixed(reply.total_seconds * 1000, 1)} ms in all`
    + `${reply.loaded_now ? " (the model was loaded for this request)" : ""}.`;
  $("segment-result").hidden = false;
  redraw();
  canvas.dataset.drawn = "true";
}

async function segment(event) {
  event.preventDefault();
  const file = $("segment-image").files[0];
  if (!file) {
    $("segment-status").textContent = "Choose an image first.";
    return;
  }
  const body = new FormData();
  body.append("image", file);
  body.append("snapshot", $("segment-snapshot").value);
  $("segment-status").textContent = "Segmenting…";
  $("segment-button").disabled = true;
  try {
    const response = await fetch(data.api, {
      method: "POST", body, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() },
    });
    const reply = await response.json();
    if (!response.ok) throw new Error(messages(reply) || `HTTP ${response.status}`);
    $("segment-status").textContent = "";
    await showAnswer(reply, file);
  } catch (error) {
    $("segment-status").textContent = error.message;
  } finally {
    $("segment-button").disabled = false;
  }
}

for (const toggle of document.querySelectorAll("#segment-classes input[data-class]")) {
  toggle.style.accentColor = data.colours[Number(toggle.dataset.class)];
  toggle.addEventListener("change", redraw);
}
$("segment-opacity").addEventListener("input", redraw);
// The button is sent disabled: a click before this script ran would submit the form to the page itself.
$("segment-form").addEventListener("submit", segment);
$("segment-button").disabled = false;
