// Job page: status, history, progress with time left and log, live; each
// kind's section (its own template and script) shows the rest.
import { api, on } from "../js/live.js";
import { duration, elapsed, el, isTerminal, progressBar, statusLabel } from "../js/format.js";

const job = JSON.parse(document.getElementById("job-data").textContent);
const MAX_LOG_LINES = 1000;

function showProgress() {
  document.getElementById("progress-bar").replaceChildren(progressBar(job.progress, job.status));
  const spent = elapsed(job);
  document.getElementById("elapsed").textContent = spent === null ? "" : `Elapsed ${duration(spent)}.`;
  const eta = job.status === "running" && job.progress > 0 && spent ? spent * (1 - job.progress) / job.progress : null;
  document.getElementById("eta").textContent = eta === null ? "" : `About ${duration(eta)} left.`;
}

function showStatus() {
  const badge = document.getElementById("status");
  badge.className = `badge ${job.status}`;
  badge.textContent = statusLabel(job.status);
  for (const form of document.querySelectorAll("[data-show-when]")) {
    form.hidden = !form.dataset.showWhen.split(" ").includes(job.status);
  }
  if (!pending()) {
    document.getElementById("queue").textContent = "";
    document.getElementById("waiting-reason").textContent = "";
  }
  if (isTerminal(job.status)) document.getElementById("abort-note").hidden = true;
  document.getElementById("silence-note").hidden = !(job.status === "running" && job.silent_since);
}

function pending() {
  return job.status === "queued" || job.status === "waiting";
}

// A waiting job's place moves as other jobs start, end or change priority:
// it is read again every few seconds while the job waits.
const PLACE_SECONDS = 3;

async function showPlace() {
  if (!pending()) return;
  const now = await api("GET", `/api/jobs/${job.id}`);
  if (!pending()) return;
  document.getElementById("queue").textContent = now.queue_position
    ? `#${now.queue_position} in the queue for a ${(now.resources.device || "cpu").toUpperCase()} device` : "";
  document.getElementById("waiting-reason").textContent = now.waiting_reason;
  document.getElementById("priority").textContent = now.priority;
}

setInterval(() => showPlace().catch(() => {}), PLACE_SECONDS * 1000);

on("queue", (event) => {
  document.getElementById("priority").textContent = event.data.priority;
  showPlace().catch(() => {});
});

on("status", (event) => {
  const { status, message } = event.data;
  if (job.status === "running" && status !== "running") job.ended_runs_seconds += event.t - Date.parse(job.started_at) / 1000;
  job.status = status;
  if (event.data.progress !== undefined) job.progress = event.data.progress;
  if (status === "running") job.started_at = new Date(event.t * 1000).toISOString();
  if (isTerminal(status)) job.finished_at = new Date(event.t * 1000).toISOString();
  if (status === "failed") {
    const box = document.getElementById("error");
    box.textContent = message;
    box.hidden = false;
  }
  // The page lists the transitions the database had; one of those may come again here.
  const shown = [...document.querySelectorAll("#history [data-transition]")].map((li) => li.dataset.transition);
  if (!shown.includes(String(event.data.transition))) {
    const time = new Date(event.t * 1000).toISOString().replace("T", " ").slice(0, 19);
    const attempt = status === "running" ? [el("span", { class: "attempt" }, `Attempt ${document.querySelectorAll("#history .attempt").length + 1}`), " "] : [];
    document.getElementById("history").append(el("li", { dataset: { transition: event.data.transition ?? "" } },
      ...attempt, el("strong", {}, statusLabel(status)), " ", el("time", {}, time), message ? ` — ${message}` : ""));
  }
  showStatus();
  showProgress();
});

// While the job runs, the clock below redraws the progress each second.
on("progress", (event) => {
  job.progress = event.data.progress;
  if (job.status !== "running") showProgress();
});

on("log", (event) => {
  const log = document.getElementById("log");
  const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.append(event.data.lines.join("\n") + "\n");
  const lines = log.textContent.split("\n");
  if (lines.length > MAX_LOG_LINES) log.textContent = lines.slice(-MAX_LOG_LINES).join("\n");
  if (stick) log.scrollTop = log.scrollHeight;
});

on("abort", () => { document.getElementById("abort-note").hidden = false; });

on("silence", (event) => {
  job.silent_since = event.data.since;
  if (job.silent_since) document.getElementById("silent-since").textContent = job.silent_since.replace("T", " ").slice(0, 19);
  showStatus();
});

for (const form of document.querySelectorAll("form[data-confirm]")) {
  form.addEventListener("submit", (e) => { if (!confirm(form.dataset.confirm)) e.preventDefault(); });
}

setInterval(() => { if (job.status === "running") showProgress(); }, 1000);
showStatus();
showProgress();
const log = document.getElementById("log");
log.scrollTop = log.scrollHeight;

// The settings as JSON, for the clipboard: the same the API answers.
const copyButton = document.getElementById("copy-settings");
copyButton.addEventListener("click", async () => {
  const text = JSON.stringify(JSON.parse(document.getElementById("settings-json").textContent), null, 2);
  try {
    await navigator.clipboard.writeText(text);
    copyButton.textContent = "Copied";
  } catch {
    copyButton.textContent = "Copy refused by the browser";
  }
  setTimeout(() => { copyButton.textContent = "Copy as JSON"; }, 2000);
});
