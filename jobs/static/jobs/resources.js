// Resources page: workers with their devices and holders, and the queue, live.
import { on } from "../js/live.js";
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

function render(snapshot) {
  const workers = document.getElementById("workers");
  workers.replaceChildren(...snapshot.workers.map((worker) => el("section", { class: "card worker" },
    el("h2", {}, worker.hostname, " ", el("small", { class: "muted" }, `worker ${worker.id.slice(0, 8)} · pid ${worker.pid} · queues ${worker.queues.join(", ")}${diskFree(worker.disk)}`)),
    el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, ...["Device", "Name", "Memory", "Utilisation", "Temperature", "Held by"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...worker.devices.map(deviceRow))))));
  if (!snapshot.workers.length) workers.append(el("p", { class: "flash error" }, "No worker is up: queued jobs wait until one starts."));
  document.querySelector("#queue-table tbody").replaceChildren(...(snapshot.queue.length ? snapshot.queue.map((job, i) => el("tr", {},
    el("td", {}, i + 1), el("td", {}, el("a", { href: job.url }, job.name)), el("td", {}, job.owner),
    el("td", {}, job.status), el("td", {}, needs(job.resources)))) : [el("tr", {}, el("td", { colspan: 5 }, "Nothing is waiting."))]));
}

on("resources", render);
render(JSON.parse(document.getElementById("snapshot-data").textContent));
