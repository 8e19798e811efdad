// The gallery of a segmentation dataset: each image's mask (a grayscale PNG
// of class indices, 255 for ignored pixels) drawn over it on a canvas of the
// stored image's size, each class in its colour. The opacity slider and the
// class toggles redraw every mask from the indices already read. An
// instance segmentation dataset's masks (`outlined`) carry each pixel's
// object too: each object's outline is drawn solid, so that objects of one
// class that touch stay apart.
import { IGNORED, alphaOf, drawIndices, indicesOf, outlines, rgbOf } from "../js/masks.js";

const { colours, mask_url: maskUrl, outlined } = JSON.parse(document.getElementById("mask-data").textContent);
const IGNORED_RGB = [255, 255, 255];

const rgb = colours.map(rgbOf);
const opacity = document.getElementById("mask-opacity");
const toggles = [...document.querySelectorAll("#mask-controls input[data-class]")];
const masks = new Map(); // canvas -> its class index a pixel, and its objects' outlines (or null)

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
  for (const [canvas, [indices, edges]] of masks) drawIndices(canvas, indices, table, alphaOf(opacity), edges);
}

async function load(holder) {
  const canvas = holder.querySelector("canvas");
  const src = maskUrl.replace("{index}", holder.dataset.index);
  const indices = await indicesOf(src, canvas.width, canvas.height);
  const edges = outlined ? outlines(await indicesOf(src, canvas.width, canvas.height, 1), canvas.width,
    canvas.height) : null;
  masks.set(canvas, [indices, edges]);
  drawIndices(canvas, indices, shownColours(), alphaOf(opacity), edges);
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
