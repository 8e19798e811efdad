// The report of an evaluation whose rows are boxes (a report of layout
// "boxes"): mAP, AP per class, the precision-recall curve of each class at
// IoU 0.5, the images worst first with their boxes drawn over them (as the
// dataset gallery draws them: an SVG whose viewBox is the stored image's
// pixels; the ground truth solid, the detections dashed with their score,
// a false positive red-captioned), the highest-scoring false positives and
// the missed boxes (those two and the worst images at the report's score
// threshold), and for new images the files and lines left out.
import { IGNORE_COLOUR, colour, svg } from "../js/boxes.js";
import { plot } from "../js/charts.js";
import { el, fixed, pct } from "../js/format.js";

const $ = (id) => document.getElementById(id);


// An instance segmentation model's report is this one, its detections
// matched to the objects by their masks (`matched_by` "masks"): its figures
// say so, and its boxes are those round the objects.
export function summaryItems(report) {
  const atScore = `(score ≥ ${report.score_threshold})`;
  const masks = report.matched_by === "masks";
  const of = masks ? "mask " : "";
  return [[`${of}mAP@0.5`, pct(report.map50)], [`${of}mAP@0.5:0.95`, pct(report.map)],
    [`Precision ${atScore}`, pct(report.precision)], [`Recall ${atScore}`, pct(report.recall)],
    ["Score threshold", report.score_threshold], ["Images", report.count], [masks ? "Objects" : "Boxes", report.boxes],
    ["Detections", report.detections], ["Loss", fixed(report.loss, 4)], ["Snapshot", report.snapshot]];
}

function imageOf(data, index) {
  return data.image_url.replace(/0\.png$/, `${index}.png`);
}

function drawn(report, data, image) {
  const [height, width] = report.image_size;
  const font = Math.max(width, height) / 14;
  const overlay = svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", class: "boxes-overlay" });
  const box = (b, attributes, text, textColour) => {
    const group = svg("g", { class: attributes.class });
    group.append(svg("rect", { x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1], fill: "none",
      "stroke-width": 2, "vector-effect": "non-scaling-stroke", ...attributes }));
    group.append(svg("text", { x: b[0], y: Math.max(b[1], font), fill: textColour, "font-size": font,
      "paint-order": "stroke", stroke: "#fff", "stroke-width": font / 6 }, text));
    overlay.append(group);
  };
  for (const t of image.truth) {
    const name = t.class === null ? "ignore" : report.classes[t.class];
    box([t.x1, t.y1, t.x2, t.y2], { class: "truth", stroke: t.ignore ? IGNORE_COLOUR : colour(t.class),
      ...(t.difficult ? { "stroke-dasharray": "1 2" } : {}) }, name, colour(t.class));
  }
  for (const d of image.detections) {
    const wrong = d.matched === false;
    box(d.box, { class: wrong ? "detection false-positive" : "detection", stroke: colour(d.class),
      "stroke-dasharray": "4 3" }, `${report.classes[d.class]} ${d.score.toFixed(2)}`, wrong ? "#b3261e" : colour(d.class));
  }
  return el("figure", { dataset: { index: image.index } },
    el("div", { class: "boxed" }, el("img", { src: imageOf(data, image.index), alt: image.name, class: "pixelated" }),
      overlay),
    el("figcaption", {}, el("span", {}, image.name),
      el("span", {}, `${image.misses} missed · ${image.false_positives} false positive(s)`)));
}

function showPerClass(report) {
  $("boxes-per-class-table").tBodies[0].replaceChildren(...Object.entries(report.per_class).map(([name, c]) =>
    el("tr", {}, el("td", {}, name), el("td", {}, c.boxes), el("td", {}, c.detections), el("td", {}, pct(c.ap50)),
      el("td", {}, pct(c.ap)))));
  $("boxes-per-class").hidden = false;
}

function showCurves(report) {
  const curves = report.pr_curves;
  const traces = report.classes.filter((name) => curves.precision[name]).map((name) => ({
    type: "scatter", mode: "lines", name, x: curves.recall, y: curves.precision[name],
    line: { color: colour(report.classes.indexOf(name)) },
    hovertemplate: `${name}<br>recall %{x:.2f}<br>precision %{y:.3f}<extra></extra>`,
  }));
  $("pr-curves").hidden = false;
  plot($("pr-chart"), traces, {
    margin: { t: 10, l: 60, b: 50, r: 10 },
    xaxis: { title: { text: "Recall" }, range: [0, 1] }, yaxis: { title: { text: "Precision" }, range: [0, 1.02] },
  });
}

function listed(report, id, rows, total, what, line) {
  $(`${id}-count`).textContent = total > rows.length ? `The first ${rows.length} of ${total} ${what}.` : `${total} ${what}.`;
  $(`${id}-table`).tBodies[0].replaceChildren(...rows.map(line));
}

const place = (row) => row.box.map((v) => fixed(v, 1)).join(", ");

export function showBoxes(report, data) {
  showPerClass(report);
  showCurves(report);
  $("worst-count").textContent = report.worst_total > report.worst.length
    ? `The ${report.worst.length} worst of ${report.worst_total} images with a missed box or a false positive `
      + `scoring at least ${report.score_threshold}.`
    : `${report.worst_total} image(s) with a missed box or a false positive scoring at least ${report.score_threshold}.`;
  $("worst-gallery").replaceChildren(...report.worst.map((image) => drawn(report, data, image)));
  $("worst-images").hidden = false;
  listed(report, "false-positives", report.false_positives, report.false_positives_total, "false positive(s)",
    (row) => el("tr", {}, el("td", {}, el("a", { href: imageOf(data, row.index) }, row.name)),
      el("td", {}, report.classes[row.class]), el("td", {}, fixed(row.score, 3)), el("td", {}, place(row))));
  $("false-positives").hidden = false;
  listed(report, "missed", report.missed, report.missed_total, "missed box(es)",
    (row) => el("tr", {}, el("td", {}, el("a", { href: imageOf(data, row.index) }, row.name)),
      el("td", {}, report.classes[row.class]), el("td", {}, place(row))));
  $("missed-boxes").hidden = false;
}
