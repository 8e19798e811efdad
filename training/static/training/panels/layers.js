// Layers: the first layer's filters, each layer's weight and gradient norms,
// and the histograms of the chosen layer's weights and gradients.
import { count, el, fixed } from "../../js/format.js";
import { COLOURS, legendAbove, plot } from "../../js/charts.js";
import { data, fileUrl, show } from "./page.js";

const layerSelect = document.getElementById("layer-select");
const filtersScale = document.getElementById("filters-scale");
const filtersDialog = document.getElementById("filters-dialog");

// The first layer's filters, each scaled to its own range (its pattern shows
// however weak it is) or all to the layer's (which filters are strong shows);
// runs from before the second picture have only the first.
function showFilters() {
  const d = data.layers;
  if (!d?.filters) return;
  document.getElementById("filters-scale-choice").hidden = !d.filters_together;
  const file = filtersScale.value === "together" && d.filters_together ? d.filters_together : d.filters;
  for (const id of ["filters-image", "filters-large"]) document.getElementById(id).src = fileUrl(file);
}

function histogram(node, hist, color) {
  const edges = hist?.edges || [], counts = hist?.counts || [];
  const centres = counts.map((_, i) => (edges[i] + edges[i + 1]) / 2);
  const widths = counts.map((_, i) => edges[i + 1] - edges[i]);
  plot(node, [{ type: "bar", x: centres, y: counts, width: widths, marker: { color }, hovertemplate: "%{x:.3g}: %{y}<extra></extra>" }], {
    height: 220, margin: { t: 8, r: 8, b: 36, l: 48 }, bargap: 0, yaxis: { title: { text: "count" } },
  });
}

function showHistograms() {
  const layer = (data.layers?.layers || []).find((l) => l.name === layerSelect.value);
  if (!layer) return;
  histogram(document.getElementById("weight-hist"), layer.weight_hist, COLOURS[0]);
  histogram(document.getElementById("grad-hist"), layer.grad_hist, COLOURS[1]);
}

export function showLayers() {
  const d = data.layers;
  if (!d) return;
  show("layers");
  document.getElementById("layers-when").textContent = `at epoch ${fixed(d.epoch)}, step ${count(d.step)}`;
  const figure = document.getElementById("filters-figure");
  figure.hidden = !d.filters;
  figure.parentElement.classList.toggle("no-filters", !d.filters);
  showFilters();
  const layers = d.layers || [];
  const chosen = layerSelect.value;
  layerSelect.replaceChildren(...layers.map((l) => el("option", { value: l.name }, l.name)));
  if (layers.some((l) => l.name === chosen)) layerSelect.value = chosen;
  showHistograms();
  const names = layers.map((l) => l.name);
  plot("norms-chart", [
    { type: "bar", name: "weight norm", x: names, y: layers.map((l) => l.weight_norm), marker: { color: COLOURS[0] } },
    { type: "bar", name: "gradient norm", x: names, y: layers.map((l) => l.grad_norm), marker: { color: COLOURS[1] } },
  ], {
    height: 240, margin: { t: 8, r: 8, b: 40, l: 56 }, barmode: "group",
    yaxis: { type: "log", title: { text: "L2 norm" }, dtick: 1, exponentformat: "power" }, xaxis: { type: "category", automargin: true },
    legend: legendAbove(),
  });
}

layerSelect.addEventListener("change", showHistograms);
filtersScale.addEventListener("change", showFilters);
document.getElementById("filters-enlarge").addEventListener("click", () => filtersDialog.showModal());
filtersDialog.addEventListener("click", (event) => { if (event.target === filtersDialog) filtersDialog.close(); });
