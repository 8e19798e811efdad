// The training section of a model's job page: metrics, learning-rate and
// throughput charts, snapshots, result, performance with profiling,
// hardware, layers and the network, each a module in panels/. It starts
// from the data embedded in the page (downsampled by the server) and follows
// the page's stream: this module receives the events, keeps the page's data
// current and tells the panels what changed.
import { on, api, freshEvents } from "../js/live.js";
import { isTerminal } from "../js/format.js";
import { data } from "./panels/page.js";
import { FIELDS, addPoints, cutCurves, showCurves } from "./panels/curves.js";
import { showSnapshots } from "./panels/snapshots.js";
import { showResult } from "./panels/result.js";
import { profileWaiting, showPerf, showProfile, showProfileForm } from "./panels/performance.js";
import { addReading, drawHardware, showHardware } from "./panels/hardware.js";
import { showLayers } from "./panels/layers.js";
import { showNetwork } from "./panels/network.js";

const fresh = freshEvents(data.through);
// The event kinds, from the page's event vocabulary.
const KINDS = data.kinds;

for (const kind of Object.keys(FIELDS)) on(kind, (event) => { if (fresh(event)) addPoints(kind, event.data); });

// The run restarted from a checkpoint taken at this step: what the
// interrupted run reported after it is being reported again.
on(KINDS.resume, (event) => {
  if (!fresh(event)) return;
  const step = event.data.step;
  cutCurves(step);
  data.snapshots = data.snapshots.filter((s) => s.step <= step);
  if (data.best && data.best.step > step) data.best = null;
  data.result = null;
  showSnapshots();
  showResult();
});

on(KINDS.snapshot, (event) => {
  if (!fresh(event)) return;
  const removed = new Set(event.data.removed || []);
  for (const s of data.snapshots) if (removed.has(s.file)) s.exists = false;
  data.snapshots.push({ ...event.data, exists: true });
  showSnapshots();
});
on(KINDS.best, (event) => {
  if (!fresh(event)) return;
  data.best = event.data;
  showSnapshots();
});

on(KINDS.result, (event) => {
  if (!fresh(event)) return;
  data.result = event.data;
  showResult();
});

// The performance panel shows the newest perf event, redrawn at most once
// a second (the trainer reports twice a second; see panels/curves.js).
const PERF_MS = 1000;
let perfTimer = null;
on(KINDS.perf, (event) => {
  if (!fresh(event)) return;
  data.perf = event.data;
  if (perfTimer === null) perfTimer = setTimeout(() => { perfTimer = null; showPerf(); }, PERF_MS);
});
on(KINDS.profile, (event) => {
  if (!fresh(event)) return;
  data.profile = event.data;
  profileWaiting(false);
  showProfile();
});

on(KINDS.hardware, (event) => { if (fresh(event)) addReading(event); });

on(KINDS.layers, (event) => {
  if (!fresh(event)) return;
  data.layers = event.data;
  showLayers();
});

on(KINDS.network, (event) => {
  if (!fresh(event)) return;
  data.network = event.data;
  showNetwork();
});

// Which buttons apply: profiling while the job runs, resuming once it ended
// (absent for users who may not change the job).
const resumeForm = document.getElementById("resume-form");

on(KINDS.status, async (event) => {
  const status = event.data.status;
  data.status = status;
  showProfileForm(status);
  if (!resumeForm) return;
  if (!isTerminal(status)) {
    resumeForm.hidden = true;
    return;
  }
  // Only the server knows whether the run left a checkpoint to resume from.
  try {
    resumeForm.hidden = !(await api("GET", data.job_api)).resumable;
  } catch {
    resumeForm.hidden = true;
  }
});

if (data.profile_requested && data.status === "running") profileWaiting(true);
showCurves();
showSnapshots();
showResult();
showPerf();
showProfile();
if (data.hardware.length) {
  showHardware();
  drawHardware();
}
showLayers();
showNetwork();
