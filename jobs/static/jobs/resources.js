// Resources page: workers with their devices and holders, the queue in the
// order it is served with why each job waits, and what each user holds, live.
import { csrfToken, on } from "../js/live.js";
import { el } from "../js/format.js";

const GiB = 1024 ** 3;

function reading(value, unit) {
  return value === null || value === undefined ? "—" : `${Math.round(value)}${unit}`;
}

function deviceRow(device) {
  const memory = device.memory_total
    ? `${(device.memory_used / GiB).toFixed(1)} / ${(device.memory_total / GiB).toFixed(1)} GiB` : "—";
  const holder = device.job
    ? (device.job.url ? el("a", { href: device.job.url }, `${device.job.name} (${device.job.owner})`)
      : `${device.job.name} (${device.job.owner})`)
    : "free";
  return el("tr", { class: device.job ? "held" : "free" },
    el("td", {}, device.id), el("td", {}, device.name), el("td", {}, memory),
    el("td", {}, reading(device.utilization, "%")), el("td", {}, reading(device.temperature, " °C")),
    el("td", {}, holder));
}

function diskFree(disk) {
  return disk && disk.total ? ` · ${(disk.free / GiB).toFixed(1)} of ${(disk.total / GiB).toFixed(1)} GiB free for data` : "";
}

function needs(resources) {
  const each = resources.ids ? `${resources.device.toUpperCase()} ${resources.ids.join(", ")}`
    : `${resources.count || 1} × ${(resources.device || "cpu").toUpperCase()}`;
  return resources.nodes ? `${resources.nodes} nodes × ${each}` : each;
}

const queueTable = document.getElementById("queue-table");
const staff = queueTable.dataset.staff === "true";
const PRIORITIES = ["high", "normal", "low"];
// Priorities staff chose in a row's select and have not set yet, by job id:
// a live snapshot re-renders the rows, which must not put a choice back.
const chosen = new Map();
queueTable.addEventListener("change", (event) => {
  if (event.target.name === "priority") chosen.set(event.target.closest("tr").dataset.job, event.target.value);
});

// A form posting to the job's queue address, back to this page.
function queueForm(job, fields, button) {
  return el("form", { method: "post", action: queueTable.dataset.action.replace("/0/", `/${job.id}/`), class: "inline" },
    el("input", { type: "hidden", name: "csrfmiddlewaretoken", value: csrfToken() }),
    el("input", { type: "hidden", name: "back", value: "resources" }), ...fields, button);
}

function staffControls(job) {
  const shown = chosen.get(String(job.id)) ?? job.priority;
  const select = el("select", { name: "priority", "aria-label": `Priority of ${job.name}` },
    ...PRIORITIES.map((p) => el("option", { value: p, selected: p === shown }, p)));
  return el("td", {},
    queueForm(job, [select], el("button", { class: "link" }, "Set")),
    " ", queueForm(job, [el("input", { type: "hidden", name: "front", value: "on" })],
      el("button", { class: "link" }, "Move to front")));
}

function queueRow(job) {
  return el("tr", { dataset: { job: job.id } },
    el("td", {}, job.position), el("td", {}, el("a", { href: job.url }, job.name)), el("td", {}, job.owner),
    el("td", { class: "priority" }, job.front ? `${job.priority}, moved to the front` : job.priority),
    el("td", {}, job.status), el("td", {}, needs(job.resources)), el("td", { class: "reason" }, job.reason),
    staff ? staffControls(job) : null);
}

function userRow(row) {
  return el("tr", {}, el("td", {}, row.user), el("td", {}, row.held.gpu), el("td", {}, row.held.cpu),
    el("td", {}, row.waiting), el("td", {}, row.limit ? `${row.limit}${row.own_limit ? "" : " (default)"}` : "none"));
}

function render(snapshot) {
  const workers = document.getElementById("workers");
  workers.replaceChildren(...snapshot.workers.map((worker) => el("section", { class: "card worker" },
    el("h2", {}, worker.hostname, " ", el("small", { class: "muted" }, `worker ${worker.id.slice(0, 8)} · pid ${worker.pid} · queues ${worker.queues.join(", ")}${diskFree(worker.disk)}`)),
    el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, ...["Device", "Name", "Memory", "Utilisation", "Temperature", "Held by"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...worker.devices.map(deviceRow))))));
  if (!snapshot.workers.length) workers.append(el("p", { class: "flash error" }, "No worker is up: queued jobs wait until one starts."));
  const columns = staff ? 8 : 7;
  queueTable.querySelector("tbody").replaceChildren(...(snapshot.queue.length ? snapshot.queue.map(queueRow)
    : [el("tr", {}, el("td", { colspan: columns }, "Nothing is waiting."))]));
  document.querySelector("#users-table tbody").replaceChildren(...(snapshot.users.length ? snapshot.users.map(userRow)
    : [el("tr", {}, el("td", { colspan: 5 }, "No one holds or waits for a device."))]));
}

on("resources", render);
render(JSON.parse(document.getElementById("snapshot-data").textContent));
