// The gallery of a segmentation dataset: each image's mask (a grayscale PNG
// of class indices, 255 for ignored pixels) drawn over it on a canvas of the
// stored image's size, each class in its colour. The opacity slider and the
// class toggles redraw every mask from the indices already read.
import { IGNORED, alphaOf, drawIndices, indicesOf, rgbOf } from "../js/masks.js";

const { colours, mask_url: maskUrl } = JSON.parse(document.getElementById("mask-data").textContent);
const IGNORED_RGB = [255, 255, 255];

const rgb = colours.map(rgbOf);
const opacity = document.getElementById("mask-opacity");
const toggles = [...document.querySelectorAll("#mask-controls input[data-class]")];
const masks = new Map(); // canvas -> its class index a pixel

function shownColours() {
  const table = new Array(256).fill(null);
  for (const toggle of toggles) {
    if (!toggle.checked) continue;
    const index = toggle.dataset.class === "ignored" ? IGNORED : Number(toggle.dataset.class);
    table[index] = index === IGNORED ? IGNORED_RGB : rgb[index];
  }
  return table;
}

function redraw() {
  const table = shownColours();
  for (const [canvas, indices] of masks) drawIndices(canvas, indices, table, alphaOf(opacity));
}

async function load(holder) {
  const canvas = holder.querySelector("canvas");
  const indices = await indicesOf(maskUrl.replace("{index}", holder.dataset.index), canvas.width, canvas.height);
  masks.set(canvas, indices);
  drawIndices(canvas, indices, shownColours(), alphaOf(opacity));
  canvas.dataset.drawn = "true";
}

for (const swatch of document.querySelectorAll("#mask-controls .swatch[data-class]")) {
  const index = swatch.dataset.class;
  swatch.style.background = index === "ignored" ? "#fff" : colours[Number(index)];
}
opacity.addEventListener("input", redraw);
for (const toggle of toggles) toggle.addEventListener("change", redraw);
await Promise.all([...document.querySelectorAll(".masked[data-index]")].map(load));
document.getElementById("gallery").dataset.masksDrawn = "true";
