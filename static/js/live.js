// The page's one live stream (browsers allow six per site over HTTP/1.1).
// Pages name it in <body data-stream>; modules subscribe with on(kind, fn).
// EventSource reconnects by itself and resumes with Last-Event-ID.
const handlers = new Map();

export function on(kind, fn) {
  if (!handlers.has(kind)) handlers.set(kind, []);
  handlers.get(kind).push(fn);
}

function dispatch(kind, data) {
  for (const fn of handlers.get(kind) || []) fn(data);
}

// A filter that passes each job's events once, in order: a reconnected
// stream, or one opened after the page embedded its data, repeats events the
// page already holds. A job page's stream carries one job (its events name
// none), and the page's data runs through sequence number `through`.
export function freshEvents(through = 0) {
  const newest = new Map();
  return (event) => {
    if (event.seq <= (newest.get(event.job) ?? through)) return false;
    newest.set(event.job, event.seq);
    return true;
  };
}

export function csrfToken() {
  return document.body.dataset.csrf;
}

export async function api(method, url, body) {
  const response = await fetch(url, {
    method,
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = response.status === 204 ? {} : await response.json();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function showDeviceCounts(counts) {
  const counter = document.getElementById("device-counter");
  if (!counter) return;
  const { gpu, cpu } = counts;
  if (gpu.total) counter.textContent = `${gpu.free} of ${gpu.total} GPUs free`;
  else if (cpu.total) counter.textContent = `No GPUs · ${cpu.free} of ${cpu.total} CPU slots free`;
  else counter.textContent = "No worker is up";
  counter.classList.toggle("busy", (gpu.total ? gpu.free : cpu.free) === 0);
}

const url = document.body.dataset.stream;
if (url) {
  const source = new EventSource(url);
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    dispatch(event.kind, event);
    dispatch("*", event);
  };
  source.addEventListener("resources", (message) => {
    const data = JSON.parse(message.data);
    showDeviceCounts(data.counts || data);
    dispatch("resources", data);
  });
  source.addEventListener("resync", () => dispatch("resync", {}));
  source.onopen = () => document.body.classList.remove("offline");
  source.onerror = () => document.body.classList.add("offline");
}
