"""Classification's dataset planner (``Task.plan``): class folders on the
server, an archive of them, or text lists of ``path label`` lines; each
image's target is its class index. Classes with too few files are left out,
too many are sampled, and each class is split by the percentages unless a
separate folder or list gives a split."""

from __future__ import annotations

import os
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from trainer import diskspace
from trainer.archives import ArchiveError, Limits, MemberReader, list_members
from trainer.buildplan import UNCOMPRESSED_ARCHIVE, BuildError, Item, Plan, split_counts
from trainer.dataset_sources import SPLITS, ClassFiles, SourceError, archive_classes, folder_classes, inside


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
        by_label[item.target].append(item)
    out = []
    for group in by_label.values():
        rng.shuffle(group)
        n_val, n_test = split_counts(len(group), config["val_percent"], config["test_percent"])
        for i, item in enumerate(group):
            item.split = "val" if i < n_val else "test" if i < n_val + n_test else "train"
            out.append(item)
    return out




def plan(config: dict[str, Any], partial: Path, roots: list[Path]) -> tuple[Plan, MemberReader | None]:
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
