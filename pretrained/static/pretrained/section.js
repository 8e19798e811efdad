// A pretrained model's section of the job page: what it holds, shown live
// when its run has checked the weights.
import { on } from "../js/live.js";
import { count } from "../js/format.js";

on("result", (event) => {
  const { network, classes, channels, input_size: size, parameters } = event.data;
  document.getElementById("pretrained-network").textContent = network;
  document.getElementById("pretrained-classes").textContent = classes;
  document.getElementById("pretrained-input").textContent = `${channels}×${size.join("×")}`;
  document.getElementById("pretrained-parameters").textContent = count(parameters);
  document.getElementById("pretrained-info").hidden = false;
  document.getElementById("pretrained-use").hidden = false;
});
