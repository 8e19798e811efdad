// The gallery of a segmentation dataset: each image's mask (a grayscale PNG
// of class indices, 255 for ignored pixels) drawn over it on a canvas of the
// stored image's size, each class in its colour. The opacity slider and the
// class toggles redraw every mask from the indices already read.
const { colours, mask_url: maskUrl } = JSON.parse(document.getElementById("mask-data").textContent);
const IGNORED = 255;
const IGNORED_RGB = [255, 255, 255];

const rgb = colours.map((hex) => [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16)));
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

function draw(canvas, indices, table, alpha) {
  const context = canvas.getContext("2d");
  const picture = context.createImageData(canvas.width, canvas.height);
  for (let i = 0; i < indices.length; i += 1) {
    const colour = table[indices[i]];
    if (!colour) continue;
    picture.data.set(colour, 4 * i);
    picture.data[4 * i + 3] = alpha;
  }
  context.putImageData(picture, 0, 0);
}

// The slider's percentage as a pixel's alpha (0 to 255).
function alpha() { return Math.round((255 * Number(opacity.value)) / 100); }

function redraw() {
  const table = shownColours();
  for (const [canvas, indices] of masks) draw(canvas, indices, table, alpha());
}

async function load(holder) {
  const canvas = holder.querySelector("canvas");
  const image = new Image();
  image.src = maskUrl.replace("{index}", holder.dataset.index);
  await image.decode();
  const reader = new OffscreenCanvas(canvas.width, canvas.height).getContext("2d");
  reader.drawImage(image, 0, 0);
  const rgba = reader.getImageData(0, 0, canvas.width, canvas.height).data;
  const indices = new Uint8Array(canvas.width * canvas.height);
  for (let i = 0; i < indices.length; i += 1) indices[i] = rgba[4 * i];
  masks.set(canvas, indices);
  draw(canvas, indices, shownColours(), alpha());
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
