// Performance (device, throughput, step time, time waiting for data, FLOPs,
// MFU) and profiling: the button that asks the running trainer to profile
// its next steps, and the trace and top operators once it has.
import { api } from "../../js/live.js";
import { count, el, fixed, flops, isNumber, num, pct } from "../../js/format.js";
import { data, fileUrl, fillList, show } from "./page.js";

export function showPerf() {
  const p = data.perf;
  if (!p) return;
  show("performance");
  const wait = isNumber(p.data_wait) ? Math.min(Math.max(p.data_wait, 0), 1) : null;
  fillList(document.getElementById("perf-list"), [
    ["Device", p.device || "—"],
    // The newest perf event's: the steps of one report interval.
    ["Images/s, latest", `${num(p.images_per_s, 5)} (training steps since the report before)`],
    ["Step time", isNumber(p.step_ms) ? `${p.step_ms.toFixed(1)} ms` : "—"],
    ["Waiting for data", wait === null ? "—" : `${pct(wait)} (computing ${pct(1 - wait)})`],
    ["FLOPs per image", flops(p.flops_per_image)],
    // Model FLOP utilisation needs the GPU's peak: null on CPUs.
    ["MFU", isNumber(p.mfu) ? pct(p.mfu) : null],
  ]);
  const bar = document.getElementById("wait-bar");
  bar.hidden = wait === null;
  if (wait !== null) {
    bar.querySelector(".wait").style.width = `${wait * 100}%`;
    bar.querySelector(".compute").style.width = `${(1 - wait) * 100}%`;
  }
}

export function showProfile() {
  const p = data.profile;
  if (!p) return;
  show("performance");
  document.getElementById("profile-result").hidden = false;
  const link = document.getElementById("profile-trace");
  link.href = fileUrl(p.file);
  link.textContent = `download the trace (${p.steps} steps)`;
  document.querySelector("#profile-table tbody").replaceChildren(...(p.top || []).map((op) => el("tr", {},
    el("td", {}, el("code", {}, op.name)), el("td", {}, count(op.calls)), el("td", {}, fixed(op.self_cpu_ms, 3)),
    el("td", {}, fixed(op.self_device_ms, 3)), el("td", {}, fixed(op.total_ms, 3)))));
}

// Absent for users who may not change the job.
const profileForm = document.getElementById("profile-form");
const profileNote = document.getElementById("profile-note");

export function profileWaiting(waiting) {
  if (!profileForm) return;
  document.getElementById("profile-button").disabled = waiting;
  profileNote.textContent = waiting ? "Profiling the next steps…" : "";
}

// Profiling is offered only while the job runs.
export function showProfileForm(status) {
  if (!profileForm) return;
  profileForm.hidden = status !== "running";
  if (status !== "running") profileWaiting(false);
}

if (profileForm) {
  profileForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await api("POST", data.profile_api);
      profileWaiting(true);
      show("performance");
    } catch (error) {
      profileNote.textContent = error.message;
    }
  });
}
