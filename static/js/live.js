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
