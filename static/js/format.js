// What the page scripts show: numbers, sizes, durations and dates as text,
// job statuses by their labels, and elements built from a tag, attributes
// and children. Values that are missing or not finite show as "—".

export const isNumber = (v) => typeof v === "number" && Number.isFinite(v);
export const num = (v, digits = 4) => (isNumber(v) ? Number(v.toPrecision(digits)).toString() : "—");
export const pct = (v, digits = 1) => (isNumber(v) ? `${(v * 100).toFixed(digits)}%` : "—");
export const fixed = (v, digits = 2) => (isNumber(v) ? v.toFixed(digits) : "—");
export const count = (v) => (isNumber(v) ? v.toLocaleString() : "—");

export function bytes(v) {
  if (!isNumber(v)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function flops(v) {
  if (!isNumber(v)) return "—";
  for (const [scale, unit] of [[1e12, "TFLOP"], [1e9, "GFLOP"], [1e6, "MFLOP"], [1e3, "kFLOP"]]) {
    if (v >= scale) return `${(v / scale).toFixed(2)} ${unit}`;
  }
  return `${v} FLOP`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  if (h) return `${h}h ${String(m).padStart(2, "0")}m`;
  if (m) return `${m}m ${String(sec).padStart(2, "0")}s`;
  return `${sec}s`;
}

// Time run over all attempts: the ended runs, as the server summed them,
// plus the current one while it goes.
export function elapsed(job) {
  if (!job.started_at) return null;
  const current = job.status === "running" ? (Date.now() - Date.parse(job.started_at)) / 1000 : 0;
  return (job.ended_runs_seconds ?? 0) + current;
}

export function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

export function percent(progress) {
  return `${Math.round((progress || 0) * 100)}%`;
}

// The job statuses as the server names them, embedded by the base template.
const statuses = JSON.parse(document.getElementById("job-statuses").textContent);

export function statusLabel(status) {
  return statuses.labels[status];
}

export function isTerminal(status) {
  return statuses.terminal.includes(status);
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export function progressBar(progress, status) {
  const bar = el("div", { class: `progress ${status}`, role: "progressbar", "aria-valuenow": Math.round(progress * 100) });
  bar.append(el("div", { class: "fill", style: `width:${percent(progress)}` }), el("span", {}, percent(progress)));
  return bar;
}
