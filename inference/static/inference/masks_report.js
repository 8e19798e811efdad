// The report of an evaluation whose rows are images scored by their masks (a
// report of layout "masks"): mIoU, pixel accuracy and Dice, each class's IoU,
// Dice, precision and recall, the pixel confusion matrix (each row's share,
// the count on hover), and the images worst first by their mIoU, each with
// its error map (right, wrong, ignored), its prediction or its truth drawn
// over it on a canvas of the stored image's size, from the two masks the
// report holds; the view and the opacity redraw them without reading again.
import { plot } from "../js/charts.js";
import { el, fixed, pct } from "../js/format.js";
import { IGNORED, alphaOf, drawIndices, indicesOf, rgbOf } from "../js/masks.js";

const $ = (id) => document.getElementById(id);
const SHARE_SCALE = [[0, "#f7fbff"], [0.5, "#6baed6"], [1, "#08306b"]];
// The error map's colours: a pixel predicted right, wrong, or ignored by the truth.
const ERRORS = { right: [46, 160, 67], wrong: [211, 47, 47], ignored: [158, 158, 158] };
const ERROR_CODES = { right: 0, wrong: 1, ignored: 2 };
const drawn = []; // {canvas, truth, predicted, errors}: each worst image's indices

export function summaryItems(report) {
  return [["mIoU", pct(report.miou)], ["Pixel accuracy", pct(report.pixel_accuracy)], ["Dice", pct(report.dice)],
    ["Images", report.count], ["Labelled pixels", report.pixels.toLocaleString()],
    ["Ignored pixels", report.ignored.toLocaleString()], ["Loss", fixed(report.loss, 4)], ["Snapshot", report.snapshot]];
}

function swatch(colour) {
  const mark = el("span", { class: "swatch" });
  mark.style.background = colour;
  return mark;
}

function showPerClass(report, colours) {
  $("masks-per-class-table").tBodies[0].replaceChildren(...report.per_class.map((c, index) => el("tr", {},
    el("td", {}, swatch(colours[index] ?? "#808080"), ` ${c.class}`), el("td", {}, c.pixels.toLocaleString()),
    el("td", {}, c.predicted.toLocaleString()), el("td", { class: "iou" }, pct(c.iou)), el("td", {}, pct(c.dice)),
    el("td", {}, pct(c.precision)), el("td", {}, pct(c.recall)))));
  $("masks-per-class").hidden = false;
}

function showConfusion(report) {
  const names = report.classes;
  const shares = report.confusion.map((row) => {
    const total = row.reduce((a, b) => a + b, 0);
    return row.map((count) => (total ? count / total : 0));
  });
  plot($("pixel-confusion-chart"), [{
    type: "heatmap", z: shares, x: names, y: names, customdata: report.confusion, colorscale: SHARE_SCALE,
    zmin: 0, zmax: 1, xgap: 1, ygap: 1, texttemplate: "%{z:.0%}",
    hovertemplate: "true %{y}<br>predicted %{x}<br>%{customdata:,} pixel(s), %{z:.1%} of the row<extra></extra>",
  }], {
    margin: { t: 10, l: 100, b: 80, r: 10 },
    xaxis: { title: { text: "Predicted" }, type: "category" },
    yaxis: { title: { text: "True" }, type: "category", autorange: "reversed" },
  });
  $("pixel-confusion").hidden = false;
}

// Each pixel's error code: right, wrong, or ignored by the truth.
function errorCodes(truth, predicted) {
  const codes = new Uint8Array(truth.length);
  for (let i = 0; i < truth.length; i += 1) {
    if (truth[i] === IGNORED) codes[i] = ERROR_CODES.ignored;
    else codes[i] = truth[i] === predicted[i] ? ERROR_CODES.right : ERROR_CODES.wrong;
  }
  return codes;
}

function tables(colours) {
  const classes = new Array(256).fill(null);
  colours.forEach((hex, index) => { classes[index] = rgbOf(hex); });
  const errors = new Array(256).fill(null);
  for (const [name, code] of Object.entries(ERROR_CODES)) errors[code] = ERRORS[name];
  return { classes, errors };
}

function redraw(colours) {
  const view = $("worst-masks-view").value;
  const alpha = alphaOf($("worst-masks-opacity"));
  const table = tables(colours);
  for (const image of drawn) {
    drawIndices(image.canvas, image[view], view === "errors" ? table.errors : table.classes, alpha);
  }
}

function showLegend(report, colours) {
  const view = $("worst-masks-view").value;
  const items = view === "errors"
    ? Object.entries(ERRORS).map(([name, rgb]) => [`rgb(${rgb.join(",")})`, name])
    : report.classes.map((name, index) => [colours[index] ?? "#808080", name]);
  $("worst-masks-legend").replaceChildren(...items.flatMap(([colour, name]) => [swatch(colour), ` ${name} `]));
}

async function figure(report, data, image) {
  const [height, width] = report.image_size;
  const canvas = el("canvas", { width, height, class: "mask-overlay" });
  const picture = data.image_url.replace(/0\.png$/, `${image.index}.png`);
  const truth = await indicesOf(`data:image/png;base64,${image.truth}`, width, height);
  const predicted = await indicesOf(`data:image/png;base64,${image.predicted}`, width, height);
  drawn.push({ canvas, truth, predicted, errors: errorCodes(truth, predicted) });
  return el("figure", { dataset: { index: image.index } },
    el("div", { class: "mask-figure" }, el("img", { src: picture, alt: image.name, class: "pixelated" }), canvas),
    el("figcaption", {}, el("span", {}, image.name),
      el("span", {}, `mIoU ${pct(image.miou)} · pixel accuracy ${pct(image.pixel_accuracy)}`),
      el("span", {}, `${image.wrong.toLocaleString()} wrong of ${image.labelled.toLocaleString()} labelled pixels`)));
}

export async function showMasks(report, data) {
  const colours = data.colours || [];
  showPerClass(report, colours);
  showConfusion(report);
  $("worst-masks-count").textContent = report.worst_total > report.worst.length
    ? `The ${report.worst.length} worst of ${report.worst_total} images with labelled pixels.`
    : `${report.worst_total} image(s) with labelled pixels.`;
  $("worst-masks").hidden = false;
  const figures = [];
  for (const image of report.worst) figures.push(await figure(report, data, image));
  $("worst-masks-gallery").replaceChildren(...figures);
  const changed = () => { showLegend(report, colours); redraw(colours); };
  $("worst-masks-view").addEventListener("change", changed);
  $("worst-masks-opacity").addEventListener("input", () => redraw(colours));
  changed();
  $("worst-masks-gallery").dataset.drawn = "true";
}
