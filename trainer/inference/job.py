"""Classify many and evaluate: ``python -m trainer.inference.job config.json``.

Classifies every image of a source with one snapshot of a trained model and
writes the per-image results and their report. Config:

- ``model_dir``: the training job's folder; ``snapshot``: a file name in its
  checkpoints, or None for the best one (a model still training: its newest,
  and the report says so);
- ``source``: ``{"type": "split", "split": "val" | "test"}`` (the model's
  dataset, read as training reads it), ``{"type": "list", "path", "prefix"}``
  (``path [label]`` lines), ``{"type": "folder", "path"}`` or
  ``{"type": "archive", "path"}`` (class subfolders give the labels; a
  detector's: ``label_format``, "auto" or a detection import format);
- ``roots``: the folders lists and folders may name; ``archive_limits``;
  ``top_n``: how many images per class the Top-N lists hold;
  ``report_options``: what a task's own report takes (its registration's
  ``evaluation_options``, e.g. a detector's ``score_threshold``).

A task whose report is its own (``Training.split_report``, e.g. boxes
scored by mAP) writes its report, rows and table instead of the
classification ones below, of a split or of the sources its registration
takes (``Task.evaluation_sources``: a folder or an archive in its own
import formats, read by its ``file_images``), with ``report_options``
(e.g. ``score_threshold``) and the files it left out (``skipped``).

It writes ``evaluation/`` in the job folder: ``results.json`` (a row per
image: ``{"index", "name", "label", "top": [[class, probability]…],
"error"}``), ``report.json`` (``report.report`` in the page's shape),
``results.csv`` and, for file sources, each image as the network got it (PNG, in the packed store's ``images`` split)
so the report page never reads the user's files again. The folder is built
as ``evaluation.partial/`` and moved into place at the end: an aborted or
failed run leaves nothing half-written. Emits ``progress`` events and a
``result`` (the accuracies) or an ``error``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer import eventkinds, eventlog, hostmemory, jobfiles
from trainer.archives import ArchiveError, Limits, extract
from trainer.buildfolder import building
from trainer.datastore import EncodedSplitWriter, encode
from trainer.evaluation_files import CSV, IMAGES, OUTPUT, REPORT, RESULTS
from trainer.imagelists import Entry, ListError, folder_entries, parse_list
from trainer.jobmain import failed, finished, job_config
from trainer.targets import ClassLabels
from trainer.tasks import task_of
from trainer.tasks.training import SplitReport, training_for

from .classify import evaluate_split, logits, split_batches, store_batches, top_classes
from .errors import InferenceError
from .model import Loaded, load_model
from .preprocess import decode, normalize
from .report import report as engine_report

BATCH = 64
PROGRESS_EVERY_SECONDS = 0.5
DIGITS = 6  # of the probabilities written
MISTAKES_SHOWN = 500


class Progress:
    def __init__(self, job_dir: Path) -> None:
        self.job_dir, self.last = job_dir, 0.0

    def __call__(self, done: int, total: int) -> None:
        if time.monotonic() - self.last >= PROGRESS_EVERY_SECONDS or done == total:
            self.last = time.monotonic()
            eventlog.append(self.job_dir, eventkinds.PROGRESS, {"progress": done / total if total else 1.0, "done": done,
                                                     "total": total})


def _pairs(top: list[dict[str, Any]]) -> list[list[Any]]:
    return [[t["index"], round(t["probability"], DIGITS)] for t in top]


def split_rows(loaded: Loaded, model_dir: Path, split: str, progress: Progress) -> list[dict[str, Any]]:
    """The rows of the model's own dataset split; ``index`` is the image's place in the split."""
    dataset_dir = json.loads((model_dir / jobfiles.CONFIG).read_text())[jobfiles.DATASET_DIR_PARAM]
    return [{"index": row["image"], "name": f"{split} #{row['image']}", "label": row["label"],
             "top": _pairs(row["top"]), "error": None}
            for row in evaluate_split(loaded, dataset_dir, split, progress=progress)]


def _decoded(loaded: Loaded, entry: Entry) -> np.ndarray:
    if not os.path.isfile(entry.path):  # a FIFO or device file would block the read
        raise InferenceError("The file does not exist (any more) or is not a regular file.")
    return decode(loaded, entry.path)


def file_rows(loaded: Loaded, entries: list[Entry], out: Path, progress: Progress) -> list[dict[str, Any]]:
    """Classify the files in batches, keeping each image as the network got
    it; a file that cannot be used gets its ``error`` and the rest go on."""
    height, width = loaded.image_size
    store = EncodedSplitWriter(out, IMAGES, (height, width, loaded.channels), len(entries), ClassLabels(), "png", 0)
    rows: list[dict[str, Any]] = []
    for start in range(0, len(entries), BATCH):
        pixels, placed = [], []
        for index, entry in enumerate(entries[start:start + BATCH], start):
            row = {"index": index, "name": entry.name, "label": entry.label, "top": None, "error": None}
            try:
                image = _decoded(loaded, entry)
                pixels.append(image)
                placed.append(row)
                store.add(encode(image, "png", 0), -1 if entry.label is None else entry.label)
            except InferenceError as exc:
                row["error"] = str(exc)
                store.add(b"", -1)
            rows.append(row)
        if pixels:
            tops = top_classes(loaded, logits(loaded, normalize(loaded, np.stack(pixels))))
            for row, top in zip(placed, tops, strict=True):
                row["top"] = _pairs(top)
        progress(len(rows), len(entries))
    store.close()
    return rows


def entries_of(source: dict[str, Any], classes: list[str], config: dict[str, Any],
               work: Path) -> tuple[list[Entry], list[str]]:
    """The files a list, a folder or an archive names, with warnings."""
    roots = [Path(root) for root in config["roots"]]
    if source["type"] == "list":
        text = Path(source["path"]).read_text(encoding="utf-8", errors="surrogateescape")
        prefix = Path(source["prefix"]) if source.get("prefix") else None
        return parse_list(text, prefix, classes, roots), []
    if source["type"] == "folder":
        return folder_entries(Path(source["path"]), classes, roots)
    extracted = work / "extracted"
    print("extracting the archive…", flush=True)
    if not extract(Path(source["path"]), extracted, Limits(**config.get("archive_limits", {}))):
        raise ListError("The archive holds no files.")
    return folder_entries(extracted, classes, [extracted.resolve()])


def page_report(rows: list[dict[str, Any]], classes: list[str], n: int) -> dict[str, Any]:
    """``report.report`` of the rows, with images named by their row
    numbers and the mistakes cut to the most confident ``MISTAKES_SHOWN``."""
    found = engine_report([{"image": row["index"], "label": row["label"], "error": row["error"],
                            "top": [{"index": c, "probability": p} for c, p in row["top"]] if row["top"] else None}
                           for row in rows], classes, n)
    mistakes = [m["image"] for m in found["mistakes"] or []]
    return {"classes": classes, "count": found["images"], "classified": found["images"] - found["errors"],
            "unreadable": found["errors"], "labelled": found["labelled"], "top1": found["top1"], "top5": found["top5"],
            "per_class": found["per_class"] or [], "confusion": found["confusion"],
            "mistakes": mistakes[:MISTAKES_SHOWN], "mistakes_total": len(mistakes),
            "top_n": {"n": n, "classes": [{"most": [s["image"] for s in c["most"]], "least": [s["image"] for s in c["least"]]}
                                          for c in found["confidence"]]}}


def write_csv(path: Path, rows: list[dict[str, Any]], classes: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["index", "image", "label", "predicted", "probability", "correct", "top5", "error"])
        for row in rows:
            label = classes[row["label"]] if row["label"] is not None else ""
            top = row["top"] or []
            predicted, probability = (classes[top[0][0]], top[0][1]) if top else ("", "")
            correct = "" if not top or row["label"] is None else int(top[0][0] == row["label"])
            out.writerow([row["index"], row["name"], label, predicted, probability, correct,
                          "; ".join(f"{classes[c]}:{p}" for c, p in top), row["error"] or ""])


def task_report(loaded: Loaded, model_config: dict[str, Any], config: dict[str, Any], work: Path,
                progress: Progress) -> SplitReport | None:
    """The model's task's own report (``Training.split_report``) of a split,
    or of a folder's or an archive's images that its ``file_images`` stores
    in ``work``; None for a task without one: classification's, written here."""
    training = training_for(task_of(model_config), len(loaded.classes), model_config)
    report_of = getattr(training, "split_report", None)
    if report_of is None:
        return None
    source = config["source"]
    if source["type"] == "split":
        batches, total = split_batches(loaded, model_config[jobfiles.DATASET_DIR_PARAM], source["split"])
        image_names, skipped = [f"{source['split']} #{index}" for index in range(total)], []
    else:
        images = training.file_images(loaded, source, config, work)
        batches, total = store_batches(loaded, images.store)
        image_names, skipped = images.names, images.skipped
    own = report_of(loaded.model, batches, total, loaded.classes, image_names, progress,
                    **config.get("report_options") or {})
    own.report["skipped"] = skipped
    return own


def write_table(path: Path, table: list[list[Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(table)


def write(work: Path, report: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    (work / RESULTS).write_text(json.dumps({"rows": rows}, separators=(",", ":")))
    (work / REPORT).write_text(json.dumps(eventlog.finite(report), separators=(",", ":")))


def run(config: dict[str, Any], job_dir: Path, work: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Evaluate the source into ``work``; the report and the result's summary."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model_dir = Path(config["model_dir"])
    loaded = load_model(model_dir, config.get("snapshot") or None, device)
    print(f"model loaded: snapshot {loaded.snapshot} on {device}", flush=True)
    if loaded.note:
        print(loaded.note, flush=True)
    source, progress = config["source"], Progress(job_dir)
    model_config = json.loads((model_dir / jobfiles.CONFIG).read_text())
    task = task_of(model_config)
    if not task.evaluates_from(source["type"]):
        raise InferenceError(f"{task.label} models are not evaluated on images from a {source['type']}.")
    said = {"snapshot": loaded.snapshot, "note": loaded.note, "source": source["type"], "split": source.get("split")}
    if own := task_report(loaded, model_config, config, work, progress):
        report = {**own.report, **said, "image_size": list(loaded.image_size), "warnings": []}
        write(work, report, own.rows)
        write_table(work / CSV, own.table)
        return report, {**own.summary, "snapshot": loaded.snapshot, "note": loaded.note}
    if source["type"] == "split":
        rows, warnings = split_rows(loaded, model_dir, source["split"], progress), []
    else:
        entries, warnings = entries_of(source, loaded.classes, config, work)
        rows = file_rows(loaded, entries, work, progress)
        shutil.rmtree(work / "extracted", ignore_errors=True)
    if not any(row["top"] for row in rows):
        first = next((row["error"] for row in rows if row["error"]), "")
        raise InferenceError(f"None of the {len(rows)} file(s) could be used as an image. The first: {first}")
    report = page_report(rows, loaded.classes, int(config.get("top_n") or 5))
    report.update(**said, warnings=warnings)
    write(work, report, rows)
    write_csv(work / CSV, rows, loaded.classes)
    return report, {key: report[key] for key in ("count", "classified", "unreadable", "labelled", "top1", "top5",
                                                  "snapshot", "note")}


def main(config_path: str) -> int:
    job_dir, config = job_config(config_path)
    hostmemory.keep_freed_memory()
    try:
        with building(job_dir / OUTPUT) as work:
            _, summary = run(config, job_dir, work)
    except (InferenceError, ListError, ArchiveError) as exc:
        return failed(job_dir, str(exc))
    return finished(job_dir, summary, str(summary))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
