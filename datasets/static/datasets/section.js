// The dataset part of a dataset job's page: the build rate while it runs,
// the per-class charts once built (images; a detection dataset's boxes, a
// segmentation dataset's pixels, an instance segmentation dataset's objects too),
// and a reload when the build finishes.
import { on } from "../js/live.js";
import { COLOURS, plot } from "../js/charts.js";

const section = document.getElementById("dataset");

if (section.dataset.built === "false") {
  on("progress", (event) => {
    const { rate, done, total } = event.data;
    if (rate !== undefined) document.getElementById("build-rate").textContent = `${done} of ${total} files, ${rate.toFixed(0)} images/s.`;
  });
  on("status", (event) => { if (event.data.status === "done") location.reload(); });
} else {
  const colours = { train: COLOURS[0], val: COLOURS[2], test: COLOURS[3], skipped: COLOURS[1] };
  // Bars per class, a series a split (`barmode` stack or group).
  const perClass = (id, data, axis, barmode = "stack") => plot(id, data.series.map((s) => ({
    type: "bar", name: s.name, x: data.classes, y: s.y, marker: { color: colours[s.name] },
  })), {
    barmode, height: 320, margin: { t: 24, r: 8, b: 80, l: 48 },
    xaxis: { type: "category" }, yaxis: axis, legend: { orientation: "h" },
  });
  perClass("class-chart", JSON.parse(document.getElementById("chart-data").textContent), { title: { text: "images" } });
  // A detection dataset's boxes per class, stacked by split.
  const boxes = document.getElementById("box-chart-data");
  if (boxes) perClass("box-chart", JSON.parse(boxes.textContent), { title: { text: "boxes" } });
  // An instance segmentation dataset's objects per class, stacked by split.
  const objects = document.getElementById("object-chart-data");
  if (objects) perClass("object-chart", JSON.parse(objects.textContent), { title: { text: "objects" } });
  // A segmentation dataset's share of the labelled pixels per class, by split.
  const shares = document.getElementById("share-chart-data");
  if (shares) {
    perClass("share-chart", JSON.parse(shares.textContent),
      { title: { text: "share of labelled pixels" }, tickformat: ".0%" }, "group");
  }
}
