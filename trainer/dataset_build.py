"""Build a dataset: ``python -m trainer.dataset_build config.json``.

The dataset's task plans it (``Task.plan``: reads the source, class folders
or a label format, from the server or an archive, and splits it); the build
decodes and resizes every image in a process pool (one per core), places
each image's target on the stored image (``TargetFormat.placed``), and
streams the results into the packed store (``trainer.datastore``) with a
mean image, ``labels.txt``, ``manifest.json`` and ``skipped.json``. A file
that cannot be used is skipped and reported, never fatal; an empty result
is.

The finished dataset is in ``dataset/`` inside the job folder; the build
writes to ``dataset.partial/`` and moves it into place only when done, so an
aborted or failed build leaves nothing half-written behind.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import multiprocessing
import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from . import diskspace, eventkinds, eventlog, jobfiles
from .archives import ArchiveError, MemberReader
from .build_pool import MeanSums, decode_batch, init_worker
from .buildfolder import building
from .buildplan import SPLITS, UNCOMPRESSED_ARCHIVE, BuildError, Plan, numbered_classes
from .children import fork_pool
from .datastore import EncodedSplitWriter, RawSplitWriter, images_file
from .jobmain import failed, finished, job_config
from .tasks import task_of

PROGRESS_EVERY_SECONDS = 0.5
TASKS_PER_BATCH = 32  # images a pool process is sent at a time


# ---- The build -------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class Progress:
    def __init__(self, job_dir: Path, total: int) -> None:
        self.job_dir, self.total = job_dir, total
        self.start = self.last = time.monotonic()

    def update(self, done: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_EVERY_SECONDS:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        eta = (self.total - done) / rate if rate else None
        eventlog.append(self.job_dir, eventkinds.PROGRESS, {"progress": done / self.total if self.total else 1.0, "done": done,
                                                 "total": self.total, "rate": rate, "eta": eta})


@dataclass
class Counted:
    """What the stored images hold: images per split, images showing each
    class per split, and what placing the targets counted (e.g. boxes left
    out as too small)."""

    images: dict[str, int] = field(default_factory=lambda: {split: 0 for split in SPLITS})
    per_class: dict[str, Counter[int]] = field(default_factory=lambda: {split: Counter() for split in SPLITS})
    placing: Counter[str] = field(default_factory=Counter)

    def add(self, split: str, classes: list[int], placing: dict[str, int]) -> None:
        self.images[split] += 1
        self.per_class[split].update(classes)
        self.placing.update(placing)


def plan(config: dict[str, Any], partial: Path, roots: list[Path]) -> tuple[Plan, MemberReader | None]:
    """The task's plan of the build, and the reader of the archive's members when the source is an archive."""
    return importlib.import_module(task_of(config).plan).plan(config, partial, roots)


def build(config: dict[str, Any], job_dir: Path, partial: Path) -> dict[str, Any]:
    """Build the dataset into the empty folder ``partial``; its manifest."""
    started = time.monotonic()
    roots = [Path(r).resolve() for r in config.get("roots", [])]
    plan_, archive = plan(config, partial, roots)
    for warning in plan_.warnings:
        print(f"warning: {warning}", flush=True)
        eventlog.append(job_dir, eventkinds.WARNING, {"message": warning})
    if not plan_.items:
        why = " ".join(plan_.warnings) or "the source holds no images to use."
        raise BuildError(f"No images to build from: {why}")

    shape = (config["height"], config["width"], config["channels"])
    counted = Counted()
    slots, planned = [], Counter()
    for item in plan_.items:
        slots.append(planned[item.split])
        planned[item.split] += 1
    raw = config["encoding"] == "none"
    targets = task_of(config).targets
    writers = {split: RawSplitWriter(partial, split, shape, planned[split], targets) if raw else
               EncodedSplitWriter(partial, split, shape, planned[split], targets, config["encoding"],
                                  config.get("quality", 90))
               for split in SPLITS}
    checksums = {split: hashlib.sha256() for split in SPLITS}
    skipped = list(plan_.skipped)
    progress = Progress(job_dir, len(plan_.items))
    processes = os.cpu_count() or 1
    classes = "classes named by their indices" if plan_.unnamed_classes else f"{len(plan_.classes)} classes"
    print(f"decoding {len(plan_.items)} files of {classes} with {processes} processes", flush=True)
    options = {k: config[k] for k in ("channels", "width", "height", "resize_mode", "seed", "encoding")}
    options.update(quality=config.get("quality", 90), roots=roots, archive=archive, targets=targets,
                   placing=config.get("placing") or {}, slots={s: w.slots() for s, w in writers.items()} if raw else {})
    context = multiprocessing.get_context("fork")
    mean = MeanSums(context, processes, shape, planned["train"]) if config.get("mean", True) and planned["train"] else None
    tasks = [(i, item.path, item.member, item.split, slots[i], item.target) for i, item in enumerate(plan_.items)]
    batches = (tasks[start:start + TASKS_PER_BATCH] for start in range(0, len(tasks), TASKS_PER_BATCH))
    with fork_pool(processes, init_worker, (options, mean)) as pool:
        try:
            results = (result for batch in pool.map(decode_batch, batches) for result in batch)
            for done, (index, ok, encoded, digest, reason, stored, placing_counts) in enumerate(results, 1):
                item = plan_.items[index]
                if not ok:
                    skipped.append({"path": item.path, "class": targets.planned_class(item.target, plan_.classes),
                                    "split": item.split, "reason": reason})
                else:
                    if raw:
                        writers[item.split].mark(slots[index], stored)
                    else:
                        writers[item.split].add(encoded, stored)
                    checksums[item.split].update(digest)
                    counted.add(item.split, targets.classes_in(stored), placing_counts)
                progress.update(done)
        except ArchiveError as exc:
            raise BuildError(str(exc)) from None
    for writer in writers.values():
        writer.close()
    progress.update(len(plan_.items), force=True)
    if sum(counted.images.values()) == 0:
        raise BuildError(f"None of the {len(plan_.items)} files could be used as an image; see the skipped-file report.")
    if plan_.unnamed_classes:
        plan_.classes = numbered_classes(1 + max((c for found in counted.per_class.values() for c in found), default=0))
    mean_sum = mean.total() if mean is not None else None
    images_sha256 = {images_file(split, config["encoding"]): checksums[split].hexdigest() for split in SPLITS}
    return _finish(config, partial, plan_, counted, skipped, mean_sum, images_sha256, started)


def _finish(config, partial, plan, counted: Counted, skipped, mean_sum, images_sha256, started) -> dict[str, Any]:
    (partial / UNCOMPRESSED_ARCHIVE).unlink(missing_ok=True)
    (partial / "labels.txt").write_text("".join(f"{name}\n" for name in plan.classes), encoding="utf-8")
    mean_file = None
    n_train = counted.images["train"]
    if mean_sum is not None and n_train:
        mean = mean_sum / n_train
        np.save(partial / "mean.npy", mean.astype(np.float32))
        pixels = np.clip(np.rint(mean), 0, 255).astype(np.uint8)
        Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels).save(partial / jobfiles.MEAN_IMAGE)
        mean_file = jobfiles.MEAN_IMAGE
    (partial / jobfiles.SKIPPED).write_text(json.dumps(skipped, ensure_ascii=False, indent=1))
    skipped_per_class: dict[str, Counter] = defaultdict(Counter)
    for entry in skipped:
        skipped_per_class[entry["class"]][entry["split"]] += 1
    manifest = {
        "version": 1,
        "task": task_of(config).name,
        "options": {k: v for k, v in config.items() if k not in ("job_id", "devices", "roots")},
        "classes": plan.classes,
        "image_shape": [config["height"], config["width"], config["channels"]],
        "encoding": config["encoding"],
        "splits": {s: {"count": counted.images[s],
                       "per_class": [counted.per_class[s][i] for i in range(len(plan.classes))]} for s in SPLITS},
        "target_counts": dict(counted.placing),
        "skipped": {"total": len(skipped), "per_class": {k: dict(v) for k, v in skipped_per_class.items()}},
        "warnings": plan.warnings,
        "labelling": plan.labelling,
        "mean": mean_file,
        "seconds": round(time.monotonic() - started, 3),
    }
    manifest["files"] = {p.name: {"bytes": p.stat().st_size, **({"images_sha256": images_sha256[p.name]}
                                                                if p.name in images_sha256 else {"sha256": sha256(p)})}
                         for p in sorted(partial.iterdir()) if p.is_file()}
    (partial / jobfiles.MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1))
    return manifest


def remove_upload(config: dict[str, Any]) -> None:
    """Delete the uploaded archive of a built dataset unless ``keep_upload``
    asks to keep it (jobs from before the option keep theirs). Only a
    successful build calls this: a failed or aborted one keeps the archive
    for a retry."""
    source = config["source"]
    if source["type"] == "archive" and config.get("keep_upload", True) is False:
        Path(source["path"]).unlink(missing_ok=True)


def main(config_path: str) -> int:
    job_dir, config = job_config(config_path)
    try:  # the unfinished dataset is gone before a failure is reported: a full disk has room for the message again
        with building(job_dir / jobfiles.DATASET) as partial:
            manifest = build(config, job_dir, partial)
    except BuildError as exc:
        return failed(job_dir, str(exc))
    except Exception as exc:
        if not diskspace.is_full(exc):
            raise
        return failed(job_dir, diskspace.full_message(job_dir))
    remove_upload(config)
    counts = {s: manifest["splits"][s]["count"] for s in SPLITS}
    return finished(job_dir, {"counts": counts, "classes": len(manifest["classes"]),
                              "skipped": manifest["skipped"]["total"], "seconds": manifest["seconds"]},
                    f"{counts} in {manifest['seconds']:.1f} s, {manifest['skipped']['total']} file(s) skipped")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
