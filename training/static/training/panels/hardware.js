// Hardware: each GPU's utilisation, memory, temperature and power, the
// process's CPU and memory, and a chart of the last HARDWARE_HISTORY readings.
import { bytes, el, isNumber } from "../../js/format.js";
import { colour, extend, legendAbove, plot } from "../../js/charts.js";
import { data, show } from "./page.js";

const HARDWARE_HISTORY = 120;
const CPU_LINE = "#475569";
const hardwareChart = document.getElementById("hardware-chart");

function hardwareTraces() {
  const readings = data.hardware;
  const x = readings.map((r) => new Date(r.t * 1000));
  const gpus = (readings[readings.length - 1]?.gpus || []).map((g) => g.index);
  return [
    ...gpus.map((index, i) => ({
      type: "scatter", mode: "lines", name: `GPU ${index} utilisation`, x, line: { color: colour(i) },
      y: readings.map((r) => (r.gpus || []).find((g) => g.index === index)?.utilization ?? null),
    })),
    { type: "scatter", mode: "lines", name: "process CPU", x, y: readings.map((r) => r.cpu_percent), line: { color: CPU_LINE, dash: "dot" } },
  ];
}

export function drawHardware() {
  plot(hardwareChart, hardwareTraces(), {
    height: 220, margin: { t: 12, r: 12, b: 36, l: 48 }, legend: legendAbove(),
    xaxis: { type: "date", tickformat: "%H:%M:%S" }, yaxis: { title: { text: "%" }, rangemode: "tozero" }, uirevision: "keep",
  });
}

export function showHardware() {
  const latest = data.hardware[data.hardware.length - 1];
  if (!latest) return;
  show("hardware");
  const gpus = latest.gpus || [];
  document.getElementById("gpu-table").hidden = gpus.length === 0;
  document.querySelector("#gpu-table tbody").replaceChildren(...gpus.map((g) => el("tr", {},
    el("td", {}, `${g.index}: ${g.name || ""}`),
    el("td", {}, isNumber(g.utilization) ? `${g.utilization}%` : "—"),
    el("td", {}, `${bytes(g.memory_used)} of ${bytes(g.memory_total)}`),
    el("td", {}, isNumber(g.temperature) ? `${g.temperature} °C` : "—"),
    el("td", {}, isNumber(g.power_watts) ? `${g.power_watts.toFixed(0)} W` : "—"))));
  document.getElementById("process-line").textContent =
    `Process: CPU ${isNumber(latest.cpu_percent) ? latest.cpu_percent.toFixed(0) : "—"}% · memory ${bytes(latest.rss_bytes)}`
    + (isNumber(latest.threads) ? ` · ${latest.threads} threads` : "") + (gpus.length ? "" : " · no GPU");
}

// A `hardware` event: the chart is extended in place while the set of GPUs
// stays the same, redrawn when it changes.
export function addReading(event) {
  const previous = data.hardware[data.hardware.length - 1];
  data.hardware.push({ t: event.t, ...event.data });
  showHardware();
  const sameGpus = previous && JSON.stringify((previous.gpus || []).map((g) => g.index))
    === JSON.stringify((event.data.gpus || []).map((g) => g.index));
  data.hardware = data.hardware.slice(-HARDWARE_HISTORY);
  if (!sameGpus) {
    drawHardware();
    return;
  }
  const x = new Date(event.t * 1000);
  const values = [...(event.data.gpus || []).map((g) => g.utilization ?? null), event.data.cpu_percent];
  extend(hardwareChart, { x: values.map(() => [x]), y: values.map((v) => [v]) }, values.map((_, i) => i), HARDWARE_HISTORY);
}
