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

// The stream opens once every script of the page has run and subscribed: an
// event dispatched before a page's module registered its handler is lost for
// good. This module runs first, and a page's own module may run seconds
// later on a loaded machine (the browser handles other tasks, the stream's
// messages among them, while it waits for that module's file); every module
// of the page has run by DOMContentLoaded, and "load" comes after it, for a
// page where this module ran later than that.
function connect() {
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

const url = document.body.dataset.stream;
if (url && document.readyState === "complete") {
  connect();
} else if (url) {
  let connected = false;
  const once = () => {
    if (!connected) connect();
    connected = true;
  };
  document.addEventListener("DOMContentLoaded", once, { once: true });
  window.addEventListener("load", once, { once: true });
}
