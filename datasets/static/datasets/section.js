// The dataset part of a dataset job's page: the build rate while it runs,
// the per-class chart once built (and a reload when the build finishes).
import { on } from "../js/live.js";

const section = document.getElementById("dataset");

if (section.dataset.built === "false") {
  on("progress", (event) => {
    const { rate, done, total } = event.data;
    if (rate !== undefined) document.getElementById("build-rate").textContent = `${done} of ${total} files, ${rate.toFixed(0)} images/s.`;
  });
  on("status", (event) => { if (event.data.status === "done") location.reload(); });
} else {
  const chart = JSON.parse(document.getElementById("chart-data").textContent);
  const colours = { train: "#2563eb", val: "#16a34a", test: "#9333ea", skipped: "#dc2626" };
  window.Plotly.newPlot("class-chart", chart.series.map((s) => ({
    type: "bar", name: s.name, x: chart.classes, y: s.y, marker: { color: colours[s.name] },
  })), {
    barmode: "stack", height: 320, margin: { t: 24, r: 8, b: 80, l: 48 },
    xaxis: { type: "category" }, yaxis: { title: { text: "images" } }, legend: { orientation: "h" },
  }, { displaylogo: false, responsive: true });
}
