// The gallery of a dataset whose images have boxes: each image's boxes drawn
// over it in an SVG whose viewBox is the stored image's pixels (so the
// boxes scale with the image), each in its class's colour with its name;
// difficult boxes dashed, ignore regions grey and hatched. The class
// toggles hide or show a class's boxes on every image.
import { IGNORE_COLOUR, colour, svg } from "../js/boxes.js";

const { classes, width, height, images } = JSON.parse(document.getElementById("drawn-data").textContent);

// One hatch pattern per overlay: ids must be unique in the page.
function hatch(id) {
  return svg("defs", {}, svg("pattern", { id, width: 6, height: 6, patternUnits: "userSpaceOnUse",
    patternTransform: `rotate(45) scale(${Math.max(width, height) / 200})` },
  svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: IGNORE_COLOUR, "stroke-width": 2 })));
}

const fontSize = Math.max(width, height) / 18;

function drawBox(box, patternId) {
  const group = svg("g", { class: box.ignore ? "ignore" : "box", "data-class": box.class ?? "" });
  const colourOf = box.ignore ? IGNORE_COLOUR : colour(box.class);
  group.append(svg("rect", {
    x: box.x1, y: box.y1, width: box.x2 - box.x1, height: box.y2 - box.y1, stroke: colourOf, "stroke-width": 2,
    "vector-effect": "non-scaling-stroke", fill: box.ignore ? `url(#${patternId})` : "none",
    "fill-opacity": box.ignore ? 0.5 : 0, ...(box.difficult ? { "stroke-dasharray": "4 3" } : {}),
  }));
  const name = box.class === null ? "ignore" : `${classes[box.class]}${box.ignore ? " (ignore)" : ""}`;
  group.append(svg("text", { x: box.x1, y: Math.max(box.y1, fontSize), fill: colourOf, "font-size": fontSize,
    "paint-order": "stroke", stroke: "#fff", "stroke-width": fontSize / 6 }, name));
  return group;
}

for (const holder of document.querySelectorAll(".boxed[data-index]")) {
  const patternId = `hatch-${holder.dataset.index}`;
  const overlay = svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", class: "boxes-overlay" },
    hatch(patternId));
  for (const box of images[holder.dataset.index] || []) overlay.append(drawBox(box, patternId));
  holder.append(overlay);
}

for (const swatch of document.querySelectorAll("#class-toggles .swatch")) {
  swatch.style.background = colour(Number(swatch.dataset.class));
}
for (const toggle of document.querySelectorAll("#class-toggles input[data-class]")) {
  toggle.style.accentColor = colour(Number(toggle.dataset.class));
  toggle.addEventListener("change", () => {
    for (const group of document.querySelectorAll(`.boxes-overlay g[data-class="${toggle.dataset.class}"]`)) {
      group.style.display = toggle.checked ? "" : "none";
    }
  });
}
