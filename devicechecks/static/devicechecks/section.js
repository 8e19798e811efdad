// The device check's section of the job page: the rate it measured, shown
// live when its result event arrives.
import { on } from "../js/live.js";

on("result", (event) => {
  const { device, gflops, matmuls } = event.data;
  document.getElementById("result-text").textContent =
    `${device}: ${gflops.toFixed(1)} GFLOP/s over ${matmuls} matrix multiplications.`;
  document.getElementById("result").hidden = false;
});
