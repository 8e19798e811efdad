// Home page: job tabs with filter, sort, collapsible groups, bulk actions,
// and live status and progress from the page's stream.
import { on, api, freshEvents } from "../js/live.js";
import { duration, elapsed, el, progressBar, when } from "../js/format.js";
import { thin } from "../js/charts.js";

const categories = JSON.parse(document.getElementById("tabs-data").textContent);
const jobs = new Map();
for (const tab of categories) for (const job of tab.jobs) jobs.set(job.id, job);
// The kinds each tab's count counts (none named: all it lists).
const counted = new Map(categories.map((tab) => [tab.id, tab.counted]));
const counts = (tab, job) => job.category === tab && (!counted.get(tab)?.length || counted.get(tab).includes(job.kind));
const fresh = freshEvents();
const selected = new Set();
const collapsed = new Set(JSON.parse(localStorage.getItem("collapsed-groups") || "[]"));
let activeTab = JSON.parse(document.getElementById("active-tab").textContent);
// By kind, the sparkline its rows draw: what it shows and the progress events' field that extends it.
const sparklines = JSON.parse(document.getElementById("sparklines-data").textContent);
let sortKey = "created_at", sortDescending = true;

const table = document.getElementById("jobs-table");
const { listUrl, bulkUrl } = table.dataset;
const filter = document.getElementById("filter");

function sortValue(job) {
  if (sortKey === "elapsed") return elapsed(job) ?? -1;
  return job[sortKey] ?? "";
}

function compare(a, b) {
  const x = sortValue(a), y = sortValue(b);
  const order = x < y ? -1 : x > y ? 1 : 0;
  return sortDescending ? -order : order;
}

function matches(job, text) {
  if (!text) return true;
  return [job.name, job.group, job.owner, job.kind, job.status_label].join(" ").toLowerCase().includes(text);
}

function statusCell(job) {
  const cell = el("td", { class: `status ${job.status}` }, job.status_label);
  if (job.queue_position) cell.append(el("small", {}, ` · #${job.queue_position} in queue`));
  return cell;
}

const SVG = "http://www.w3.org/2000/svg";
const SPARK_POINTS = 60, SPARK_WIDTH = 90, SPARK_HEIGHT = 18;

// The sparkline of a job whose kind draws one, as a small line.
function sparkline(job) {
  const values = job.sparkline || [];
  const label = sparklines[job.kind]?.label;
  if (!label || values.length < 2) return "";
  const low = Math.min(...values), high = Math.max(...values), span = high - low || 1;
  const points = values.map((v, i) => `${((i / (values.length - 1)) * SPARK_WIDTH).toFixed(1)},`
    + `${(SPARK_HEIGHT - 1 - ((v - low) / span) * (SPARK_HEIGHT - 2)).toFixed(1)}`).join(" ");
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "sparkline");
  svg.setAttribute("width", SPARK_WIDTH);
  svg.setAttribute("height", SPARK_HEIGHT);
  svg.setAttribute("viewBox", `0 0 ${SPARK_WIDTH} ${SPARK_HEIGHT}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${label}, latest ${values[values.length - 1].toPrecision(4)}`);
  const title = document.createElementNS(SVG, "title");
  title.textContent = `${label}: ${values[values.length - 1].toPrecision(4)} (lowest ${low.toPrecision(4)})`;
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points);
  svg.append(title, line);
  return svg;
}

function progressCell(job) {
  return el("div", { class: "progress-cell" }, progressBar(job.progress, job.status), sparkline(job));
}

function row(job) {
  const box = el("input", { type: "checkbox", "aria-label": `Select ${job.name}` });
  box.checked = selected.has(job.id);
  box.addEventListener("change", () => { box.checked ? selected.add(job.id) : selected.delete(job.id); updateButtons(); });
  return el("tr", { dataset: { job: job.id } },
    el("td", {}, box),
    el("td", {}, el("a", { href: job.url }, job.name)),
    el("td", {}, job.kind),
    el("td", {}, job.owner),
    statusCell(job),
    el("td", {}, progressCell(job)),
    el("td", { class: "elapsed" }, duration(elapsed(job))),
    el("td", {}, when(job.created_at)));
}

function render() {
  document.querySelectorAll("[role=tab]").forEach((b) => b.setAttribute("aria-selected", b.dataset.tab === activeTab));
  document.querySelectorAll("[role=tab]").forEach((b) => {
    b.querySelector(".count").textContent = [...jobs.values()].filter((j) => counts(b.dataset.tab, j)).length;
  });
  const text = filter.value.trim().toLowerCase();
  const shown = [...jobs.values()].filter((j) => j.category === activeTab && matches(j, text)).sort(compare);
  // Each user's groups are their own: two users' groups of one name are two
  // groups, told apart by their page's URL (which names the owner).
  const groups = new Map();
  for (const job of shown) {
    const key = job.group_url || "";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(job);
  }
  const label = (key) => key ? `${groups.get(key)[0].group} · ${groups.get(key)[0].owner}` : "";
  table.querySelectorAll("tbody").forEach((b) => b.remove());
  for (const key of [...groups.keys()].sort((a, b) => label(a).localeCompare(label(b)))) {
    const first = groups.get(key)[0];
    const body = el("tbody", key ? { dataset: { group: first.group, owner: first.owner } } : {});
    if (key) {
      const isCollapsed = collapsed.has(key);
      const toggle = el("button", { class: "link group-toggle", "aria-expanded": !isCollapsed, onclick: () => {
        collapsed.has(key) ? collapsed.delete(key) : collapsed.add(key);
        localStorage.setItem("collapsed-groups", JSON.stringify([...collapsed]));
        render();
      } }, `${isCollapsed ? "▸" : "▾"} ${label(key)} (${groups.get(key).length})`);
      const link = categories.find((tab) => tab.id === activeTab)?.group_link;
      const curves = link ? el("a", { class: "group-link", href: key }, link) : "";
      body.append(el("tr", { class: "group" }, el("th", { colspan: 8 }, toggle, curves)));
      if (isCollapsed) { table.append(body); continue; }
    }
    for (const job of groups.get(key)) body.append(row(job));
    table.append(body);
  }
  document.getElementById("empty").hidden = shown.length > 0;
  table.querySelectorAll("th[data-sort]").forEach((th) => {
    th.classList.toggle("sorted", th.dataset.sort === sortKey);
    th.classList.toggle("descending", th.dataset.sort === sortKey && sortDescending);
  });
  updateButtons();
}

function updateButtons() {
  for (const id of selected) if (!jobs.has(id)) selected.delete(id);
  document.getElementById("compare-selected").disabled = selected.size === 0;
  document.getElementById("abort-selected").disabled = selected.size === 0;
  document.getElementById("delete-selected").disabled = selected.size === 0;
}

async function reload() {
  const data = await api("GET", listUrl);
  jobs.clear();
  for (const job of data.jobs) jobs.set(job.id, job);
  render();
}

async function bulk(action) {
  if (action === "delete" && !confirm(`Delete ${selected.size} job(s) and their files?`)) return;
  const data = await api("POST", bulkUrl, { action, ids: [...selected] });
  const failures = Object.entries(data.results).filter(([, r]) => !r.ok);
  document.getElementById("bulk-result").textContent = failures.length
    ? failures.map(([id, r]) => `#${id}: ${r.error}`).join(" ")
    : `${action === "abort" ? "Aborted" : "Deleted"} ${Object.keys(data.results).length} job(s).`;
  selected.clear();
  await reload();
}

document.querySelectorAll("[role=tab]").forEach((button) => button.addEventListener("click", () => {
  activeTab = button.dataset.tab;
  history.replaceState(null, "", `?tab=${activeTab}`);
  render();
}));
table.querySelectorAll("th[data-sort]").forEach((th) => th.addEventListener("click", () => {
  sortDescending = th.dataset.sort === sortKey ? !sortDescending : false;
  sortKey = th.dataset.sort;
  render();
}));
document.getElementById("select-all").addEventListener("change", (e) => {
  const text = filter.value.trim().toLowerCase();
  for (const job of jobs.values()) {
    if (job.category === activeTab && matches(job, text)) e.target.checked ? selected.add(job.id) : selected.delete(job.id);
  }
  render();
});
filter.addEventListener("input", render);
document.getElementById("compare-selected").addEventListener("click", (e) => {
  window.location.assign(`${e.target.dataset.url}?${new URLSearchParams({ ids: [...selected].join(",") })}`);
});
document.getElementById("abort-selected").addEventListener("click", () => bulk("abort"));
document.getElementById("delete-selected").addEventListener("click", () => bulk("delete"));

let reloadTimer = null;
function reloadSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(reload, 250);
}

on("status", (event) => {
  if (!fresh(event)) return;
  const job = jobs.get(event.job);
  if (job) Object.assign(job, { status: event.data.status, progress: event.data.progress ?? job.progress });
  // Start times and queue positions of other jobs change too: fetch the list.
  reloadSoon();
});
on("progress", (event) => {
  if (!fresh(event)) return;
  const job = jobs.get(event.job);
  if (!job) return;
  job.progress = event.data.progress;
  const field = sparklines[job.kind]?.live_field;
  const value = field ? event.data[field] : undefined;
  if (Array.isArray(job.sparkline) && typeof value === "number" && Number.isFinite(value)) {
    job.sparkline = [...job.sparkline, value];
    if (job.sparkline.length > 2 * SPARK_POINTS) job.sparkline = thin(job.sparkline, SPARK_POINTS);
  }
  const tr = table.querySelector(`tr[data-job="${event.job}"]`);
  if (tr) tr.children[5].replaceChildren(progressCell(job));
});
on("resync", reload);

setInterval(() => {
  for (const tr of table.querySelectorAll("tr[data-job]")) {
    const job = jobs.get(Number(tr.dataset.job));
    if (job && job.status === "running") tr.querySelector(".elapsed").textContent = duration(elapsed(job));
  }
}, 1000);

render();
