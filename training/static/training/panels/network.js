// The network: its input, classes, parameter count and FLOPs, and its layer table.
import { count, el, flops } from "../../js/format.js";
import { data, show } from "./page.js";

export function showNetwork() {
  const n = data.network;
  if (!n) return;
  show("network");
  const s = n.summary || {};
  const input = Array.isArray(n.input) ? n.input.join("×") : "—";
  document.getElementById("network-summary").textContent =
    `Input ${input} · ${(n.classes || []).length} classes · ${count(s.params)} parameters (${count(s.trainable)} trainable)`
    + ` · ${flops(s.flops_per_image)} per image`;
  document.querySelector("#network-table tbody").replaceChildren(...(s.layers || []).map((l) => el("tr", {},
    el("td", {}, el("code", {}, l.name)), el("td", {}, l.type),
    el("td", {}, Array.isArray(l.output_shape) ? l.output_shape.join("×") : ""), el("td", {}, count(l.params)))));
}
