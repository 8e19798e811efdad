"""Build an image classification dataset: ``python -m trainer.dataset_build config.json``.

Reads a source (class folders, an archive of them, or text lists), splits it,
decodes and resizes every image in a process pool (one per core), and streams
the results into the packed store (``trainer.datastore``) with a mean image,
``labels.txt``, ``manifest.json`` and ``skipped.json``. A file that cannot be
used is skipped and reported, never fatal; an empty result is.

The finished dataset is in ``dataset/`` inside the job folder; the build
writes to ``dataset.partial/`` and moves it into place only when done, so an
aborted or failed build leaves nothing half-written behind.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from . import diskspace, eventkinds, eventlog, jobfiles
from .archives import ArchiveError, Entry, Limits, MemberReader, list_members
from .build_pool import MeanSums, decode_batch, init_worker
from .buildfolder import building
from .children import fork_pool
from .dataset_sources import SPLITS, ClassFiles, SourceError, archive_classes, folder_classes, inside
from .datastore import EncodedSplitWriter, RawSplitWriter, images_file
from .jobmain import failed, finished, job_config
from .tasks import task_of

PROGRESS_EVERY_SECONDS = 0.5
TASKS_PER_BATCH = 32  # images a pool process is sent at a time
UNCOMPRESSED_ARCHIVE = "archive.tar"  # a compressed tar's uncompressed copy, read in place by the pool


class BuildError(Exception):
    """A problem with the whole build (not one file); its message is shown to the user."""


@dataclass
class Item:
    path: str  # a file's path, or an archive member's name as the archive spells it
    label: int
    split: str
    member: Entry | None = None


@dataclass
class Plan:
    classes: list[str]
    items: list[Item]
    skipped: list[dict[str, Any]]
    warnings: list[str]


# ---- Sources -------------------------------------------------------------------------------


def limit_per_class(files: dict[str, list[str]], minimum: int, maximum: int | None, rng: random.Random,
                    where: str, warnings: list[str]) -> dict[str, list[str]]:
    kept = {}
    for name, paths in files.items():
        if len(paths) < minimum:
            warnings.append(f"Class '{name}' has {len(paths)} file(s) in {where}, under the minimum of {minimum}; left out.")
            continue
        if maximum and len(paths) > maximum:
            paths = sorted(rng.sample(paths, maximum))
        kept[name] = paths
    return kept


def split_counts(n: int, val_percent: float, test_percent: float) -> tuple[int, int]:
    """Validation and test counts for a class of ``n`` files, leaving at least one for training."""
    n_val, n_test = round(n * val_percent / 100), round(n * test_percent / 100)
    while n_val + n_test >= n and n_val + n_test > 0:
        if n_val >= n_test:
            n_val -= 1
        else:
            n_test -= 1
    return n_val, n_test


def plan_classes(found: dict[str, ClassFiles], config: dict[str, Any]) -> Plan:
    """The plan for class folders (``found``: each split's class files; the training split's are required)."""
    rng = random.Random(config["seed"])
    warnings: list[str] = []
    train = limit_per_class(found["train"], config["min_per_class"], config.get("max_per_class"), rng,
                            "the training folder", warnings)
    classes = sorted(train)
    label = {name: i for i, name in enumerate(classes)}
    items, skipped = [], []
    separate = {s: f for s, f in found.items() if s != "train"}
    for name in classes:
        paths = list(train[name])
        rng.shuffle(paths)
        # A separate folder for a split replaces taking that split from the training images.
        n_val, n_test = split_counts(len(paths), 0 if "val" in separate else config["val_percent"],
                                     0 if "test" in separate else config["test_percent"])
        for split, chunk in (("val", paths[:n_val]), ("test", paths[n_val:n_val + n_test]), ("train", paths[n_val + n_test:])):
            items.extend(Item(p, label[name], split) for p in chunk)
    for split, split_files in separate.items():
        files = limit_per_class(split_files, config.get(f"{split}_min_per_class") or 0,
                                config.get(f"{split}_max_per_class"), rng, f"the {split} folder", warnings)
        for name, paths in files.items():
            if name not in label:
                warnings.append(f"Class '{name}' of the {split} folder is not among the training classes; its "
                                f"{len(paths)} file(s) are skipped.")
                skipped.extend({"path": p, "class": name, "split": split, "reason": "class not in the training set"}
                               for p in paths)
                continue
            items.extend(Item(p, label[name], split) for p in paths)
    rng.shuffle(items)  # a store in random order: the gallery mixes classes, a sequential read is not class by class
    return Plan(classes, items, skipped, warnings)


def read_list(path: Path, prefix: Path | None, classes: list[str], roots: list[Path], split: str,
              skipped: list[dict[str, Any]]) -> list[tuple[str, int]]:
    entries = []
    text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, _, label_text = line.rstrip().rpartition(" ")
        problem = ""
        if not name or not label_text.lstrip("-").isdigit():
            problem, name = f"line {number} is not 'path label'", line.strip()
        elif not 0 <= int(label_text) < len(classes):
            problem = f"label {label_text} on line {number} is not in the labels file"
        image_path = (prefix / name) if prefix and not os.path.isabs(name) else Path(name)
        if not problem and not inside(image_path, roots):
            problem = "outside the folders this server may read"
        if problem:
            skipped.append({"path": str(image_path), "class": "", "split": split, "reason": problem})
            continue
        entries.append((str(image_path), int(label_text)))
    return entries


def plan_lists(source: dict[str, Any], config: dict[str, Any], roots: list[Path]) -> Plan:
    classes = [line.strip() for line in Path(source["labels"]).read_text(encoding="utf-8").splitlines() if line.strip()]
    if not classes:
        raise BuildError("The labels file lists no classes.")
    prefix = Path(source["prefix"]) if source.get("prefix") else None
    rng = random.Random(config["seed"])
    skipped: list[dict[str, Any]] = []
    warnings: list[str] = []
    lists = {split: read_list(Path(source[split]), prefix, classes, roots, split, skipped)
             for split in SPLITS if source.get(split)}
    if source.get("shuffle"):
        for entries in lists.values():
            rng.shuffle(entries)
    by_class: dict[str, list[str]] = defaultdict(list)
    for path, label in lists["train"]:
        by_class[classes[label]].append(path)
    kept = limit_per_class({c: by_class[c] for c in classes if c in by_class}, config["min_per_class"],
                           config.get("max_per_class"), rng, "the training list", warnings)
    kept_paths = {name: set(paths) for name, paths in kept.items()}
    items = [Item(path, label, "train") for path, label in lists["train"] if path in kept_paths.get(classes[label], ())]
    for split in ("val", "test"):
        items.extend(Item(path, label, split) for path, label in lists.get(split, []) if classes[label] in kept)
    if not lists.get("val") and not lists.get("test") and (config["val_percent"] or config["test_percent"]):
        items = _split_items(items, config, rng)
    return Plan(classes, items, skipped, warnings)


def _split_items(items: list[Item], config: dict[str, Any], rng: random.Random) -> list[Item]:
    by_label: dict[int, list[Item]] = defaultdict(list)
    for item in items:
        by_label[item.label].append(item)
    out = []
    for group in by_label.values():
        rng.shuffle(group)
        n_val, n_test = split_counts(len(group), config["val_percent"], config["test_percent"])
        for i, item in enumerate(group):
            item.split = "val" if i < n_val else "test" if i < n_val + n_test else "train"
            out.append(item)
    return out


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


def _plan(config: dict[str, Any], partial: Path, roots: list[Path]) -> tuple[Plan, MemberReader | None]:
    """The plan, and the reader of the archive's members when the source is an archive."""
    source = config["source"]
    try:
        if source["type"] == "archive":
            print("checking the archive…", flush=True)
            listing = list_members(Path(source["path"]), partial / UNCOMPRESSED_ARCHIVE,
                                   Limits(**config.get("archive_limits", {})))
            plan = plan_classes(archive_classes(listing), config)
            members = {entry.name: entry for entry in listing.files}
            for item in plan.items:
                item.member = members[item.path]
            return plan, listing.reader
        if source["type"] == "folder":
            return plan_classes(folder_classes({s: Path(source[s]) for s in SPLITS if source.get(s)}), config), None
    except (ArchiveError, SourceError) as exc:
        if diskspace.is_full(exc):  # the uncompressed copy found no room: not the archive's fault
            raise
        raise BuildError(str(exc)) from None
    return plan_lists(source, config, roots), None


def build(config: dict[str, Any], job_dir: Path, partial: Path) -> dict[str, Any]:
    """Build the dataset into the empty folder ``partial``; its manifest."""
    started = time.monotonic()
    roots = [Path(r).resolve() for r in config.get("roots", [])]
    plan, archive = _plan(config, partial, roots)
    for warning in plan.warnings:
        print(f"warning: {warning}", flush=True)
        eventlog.append(job_dir, eventkinds.WARNING, {"message": warning})
    if not plan.items:
        why = " ".join(plan.warnings) or "the source holds no class folders with files."
        raise BuildError(f"No images to build from: {why}")

    shape = (config["height"], config["width"], config["channels"])
    counts = {split: Counter() for split in SPLITS}
    slots, planned = [], Counter()
    for item in plan.items:
        slots.append(planned[item.split])
        planned[item.split] += 1
    raw = config["encoding"] == "none"
    targets = task_of(config).targets
    writers = {split: RawSplitWriter(partial, split, shape, planned[split], targets) if raw else
               EncodedSplitWriter(partial, split, shape, planned[split], targets, config["encoding"],
                                  config.get("quality", 90))
               for split in SPLITS}
    checksums = {split: hashlib.sha256() for split in SPLITS}
    skipped = list(plan.skipped)
    progress = Progress(job_dir, len(plan.items))
    processes = os.cpu_count() or 1
    print(f"decoding {len(plan.items)} files of {len(plan.classes)} classes with {processes} processes", flush=True)
    options = {k: config[k] for k in ("channels", "width", "height", "resize_mode", "seed", "encoding")}
    options.update(quality=config.get("quality", 90), roots=roots, archive=archive,
                   slots={s: w.slots() for s, w in writers.items()} if raw else {})
    context = multiprocessing.get_context("fork")
    mean = MeanSums(context, processes, shape, planned["train"]) if config.get("mean", True) and planned["train"] else None
    tasks = [(i, item.path, item.member, item.split, slots[i]) for i, item in enumerate(plan.items)]
    batches = (tasks[start:start + TASKS_PER_BATCH] for start in range(0, len(tasks), TASKS_PER_BATCH))
    with fork_pool(processes, init_worker, (options, mean)) as pool:
        try:
            results = (result for batch in pool.map(decode_batch, batches) for result in batch)
            for done, (index, ok, encoded, digest, reason) in enumerate(results, 1):
                item = plan.items[index]
                if not ok:
                    skipped.append({"path": item.path, "class": plan.classes[item.label], "split": item.split,
                                    "reason": reason})
                else:
                    if raw:
                        writers[item.split].mark(slots[index], item.label)
                    else:
                        writers[item.split].add(encoded, item.label)
                    checksums[item.split].update(digest)
                    counts[item.split][item.label] += 1
                progress.update(done)
        except ArchiveError as exc:
            raise BuildError(str(exc)) from None
    for writer in writers.values():
        writer.close()
    progress.update(len(plan.items), force=True)
    total = sum(sum(c.values()) for c in counts.values())
    if total == 0:
        raise BuildError(f"None of the {len(plan.items)} files could be used as an image; see the skipped-file report.")
    mean_sum = mean.total() if mean is not None else None
    images_sha256 = {images_file(split, config["encoding"]): checksums[split].hexdigest() for split in SPLITS}
    return _finish(config, partial, plan, counts, skipped, mean_sum, images_sha256, started)


def _finish(config, partial, plan, counts, skipped, mean_sum, images_sha256, started) -> dict[str, Any]:
    (partial / UNCOMPRESSED_ARCHIVE).unlink(missing_ok=True)
    (partial / "labels.txt").write_text("".join(f"{name}\n" for name in plan.classes), encoding="utf-8")
    mean_file = None
    n_train = sum(counts["train"].values())
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
        "splits": {s: {"count": sum(counts[s].values()), "per_class": [counts[s][i] for i in range(len(plan.classes))]}
                   for s in SPLITS},
        "skipped": {"total": len(skipped), "per_class": {k: dict(v) for k, v in skipped_per_class.items()}},
        "warnings": plan.warnings,
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
