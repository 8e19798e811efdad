// New dataset form (any task's): show the chosen source's fields (and JPEG
// quality for JPEG only), browse server folders,
// preview the resize on one of the user's images, and send the form with an
// upload progress bar.
import { api, csrfToken } from "../js/live.js";
import { el } from "../js/format.js";

const form = document.getElementById("new-dataset");
const { foldersUrl, previewUrl } = form.dataset;
const source = form.querySelector("#id_source");

function showSource() {
  for (const block of form.querySelectorAll("[data-source]")) block.hidden = block.dataset.source !== source.value;
}
source.addEventListener("change", showSource);
showSource();

// The JPEG quality applies to JPEG alone (without this script the field
// stays, and says so).
const encoding = form.querySelector("#id_encoding");
const quality = form.querySelector('[data-field="quality"]');
function showQuality() { quality.hidden = encoding.value !== "jpeg"; }
encoding.addEventListener("change", showQuality);
showQuality();

// A detection form's label formats and a segmentation form's layouts: the
// chosen one's help stands out.
function highlightChosen(select, lines, key) {
  if (!select) return;
  const show = () => {
    for (const line of form.querySelectorAll(lines)) line.classList.toggle("chosen", line.dataset[key] === select.value);
  };
  select.addEventListener("change", show);
  show();
}
highlightChosen(form.querySelector("#id_label_format"), "#label-formats [data-format]", "format");
highlightChosen(form.querySelector("#id_layout"), "#layouts [data-layout]", "layout");

// Folder browser, limited to the server's dataset roots.
const browser = document.getElementById("folder-browser");
let target = null;
let current = null;

async function browse(path) {
  const error = document.getElementById("browser-error");
  try {
    const data = await api("GET", `${foldersUrl}${path ? `?path=${encodeURIComponent(path)}` : ""}`);
    current = data;
    error.hidden = true;
    document.getElementById("browser-path").textContent = data.path || "Allowed folders";
    document.getElementById("browser-up").hidden = !data.path;
    document.getElementById("browser-choose").hidden = !data.path;
    const list = document.getElementById("browser-folders");
    list.replaceChildren(...data.folders.map((f) => el("li", {},
      el("button", { type: "button", class: "link", onclick: () => browse(f.path) }, `${f.name}/`))));
    if (data.path) list.append(el("li", { class: "muted" }, `${data.files} file(s) here`));
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
  }
}
for (const button of form.querySelectorAll("button.browse")) {
  button.addEventListener("click", () => {
    target = document.getElementById(button.dataset.target);
    browser.hidden = false;
    browse(target.value.trim() || null);
  });
}
document.getElementById("browser-up").addEventListener("click", () => browse(current.parent));
document.getElementById("browser-choose").addEventListener("click", () => {
  target.value = current.path;
  browser.hidden = true;
});
document.getElementById("browser-close").addEventListener("click", () => { browser.hidden = true; });

// Resize preview.
async function preview(extra) {
  const body = new FormData();
  for (const name of ["width", "height", "resize_mode", "image_type"]) body.append(name, form.elements[name].value);
  for (const [k, v] of Object.entries(extra)) body.append(k, v);
  const response = await fetch(previewUrl, { method: "POST", body, headers: { "X-CSRFToken": csrfToken() } });
  const image = document.getElementById("preview-image");
  const error = document.getElementById("preview-error");
  if (response.ok) {
    image.src = URL.createObjectURL(await response.blob());
    image.hidden = false;
    error.hidden = true;
  } else {
    error.textContent = (await response.json()).error;
    error.hidden = false;
  }
}
const previewFile = document.getElementById("preview-file");
let lastPreview = null;
previewFile.addEventListener("change", () => {
  if (previewFile.files.length) preview(lastPreview = { image: previewFile.files[0] });
});
// A task whose folder holds more than images (labels beside them) has no such button.
const previewFolder = document.getElementById("preview-folder");
previewFolder?.addEventListener("click", () => preview(lastPreview = { folder: form.elements[previewFolder.dataset.field].value }));
for (const name of ["width", "height", "resize_mode", "image_type"]) {
  form.elements[name].addEventListener("change", () => { if (lastPreview) preview(lastPreview); });
}

// Submit with a progress bar for uploads; field errors shown next to their fields.
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const archive = form.elements.archive.files[0];
  const limit = Number(form.dataset.uploadMax);
  const formError = document.getElementById("form-error");
  if (source.value === "archive" && archive && archive.size > limit) {
    formError.textContent = `The archive is ${(archive.size / 1e9).toFixed(2)} GB, over the limit of ${(limit / 1e9).toFixed(2)} GB.`;
    formError.hidden = false;
    return;
  }
  // The other fields go before the files, so the server checks them before
  // it reads an upload (a mistake there costs no upload).
  const entries = [...new FormData(form)].filter(([name]) => name !== "archive" || source.value === "archive");
  const body = new FormData();
  for (const [name, value] of entries.filter(([, v]) => !(v instanceof File))) body.append(name, value);
  for (const [name, value] of entries.filter(([, v]) => v instanceof File)) body.append(name, value);
  const request = new XMLHttpRequest();
  const bar = document.getElementById("upload-progress");
  request.open("POST", form.action || location.href);
  request.setRequestHeader("Accept", "application/json");
  request.setRequestHeader("X-CSRFToken", csrfToken());
  request.upload.addEventListener("progress", (e) => {
    if (!e.lengthComputable) return;
    bar.hidden = false;
    bar.querySelector("progress").value = (100 * e.loaded) / e.total;
    bar.querySelector("span").textContent = `${(e.loaded / 1e6).toFixed(1)} of ${(e.total / 1e6).toFixed(1)} MB sent`;
  });
  request.addEventListener("load", () => {
    const data = JSON.parse(request.responseText || "{}");
    if (request.status === 201) { location.href = data.url; return; }
    for (const span of form.querySelectorAll(".errors")) span.replaceChildren();
    for (const [field, errors] of Object.entries(data.errors || {})) {
      const holder = form.querySelector(`[data-field="${field}"] .errors`) || formError;
      for (const e of errors) holder.append(el("span", { class: "flash error" }, e.message || e));
      if (holder === formError) formError.hidden = false;
    }
    if (!data.errors) { formError.textContent = data.error || `HTTP ${request.status}`; formError.hidden = false; }
    form.querySelector(".flash.error")?.scrollIntoView({ block: "center" });
  });
  request.addEventListener("error", () => { formError.textContent = "The upload failed: the connection was lost."; formError.hidden = false; });
  request.send(body);
});
