// An export job's section of the job page: the stage it is at, then the
// archive's download link, live from the page's stream.
import { on } from "../js/live.js";
import { bytes } from "../js/format.js";

const stage = document.getElementById("export-stage");

on("progress", (event) => {
  if (event.data.stage) stage.textContent = `${event.data.stage}…`;
});

on("result", (event) => {
  stage.hidden = true;
  document.getElementById("export-size").textContent = bytes(event.data.size);
  document.getElementById("export-download").hidden = false;
});

on("status", (event) => {
  if (["failed", "aborted"].includes(event.data.status)) stage.hidden = true;
});
