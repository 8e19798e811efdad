"""Object detection's dataset planner (``Task.plan``): a server folder or an
uploaded archive of images with labels in KITTI, Pascal VOC, COCO or YOLO
format (``trainer.detection.importer``), guessed from the layout when the
user does not say. Every bad file or line is reported with its file, line
and reason, and its image left out; the good images are kept. Images the
source puts in a split (COCO's instances_val.json, YOLO's images/val/) stay
in it; the others are split by the percentages."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

from trainer import diskspace
from trainer.archives import ArchiveError, Limits, MemberReader, list_members
from trainer.buildplan import UNCOMPRESSED_ARCHIVE, BuildError, Item, Plan, split_counts
from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Annotated, Box, Found
from trainer.detection.common import ImportOptions
from trainer.detection.importer import chosen_format, read_source
from trainer.detection.sourcefiles import ArchiveFiles, FolderFiles, SourceFiles
from trainer.detection.targets import DIFFICULT, IGNORE, NO_CLASS, PlannedBoxes

# The reasons an import with no usable image fails with.
FIRST_REASONS = 5


def plan(config: dict[str, Any], partial: Path, roots: list[Path]) -> tuple[Plan, MemberReader | None]:
    source = config["source"]
    reader = None
    try:
        if source["type"] == "archive":
            print("checking the archive…", flush=True)
            listing = list_members(Path(source["path"]), partial / UNCOMPRESSED_ARCHIVE,
                                   Limits(**config.get("archive_limits", {})))
            files: SourceFiles = ArchiveFiles(listing)
            reader = listing.reader
        elif source["type"] == "folder":
            files = FolderFiles(Path(source["path"]))
        else:
            raise BuildError(f"A detection dataset is read from a folder or an archive, not from {source['type']}.")
        chosen = config.get("label_format") or "auto"
        label_format = chosen_format(files, chosen)
        if chosen == "auto":
            print(f"label format: {label_format}", flush=True)
        found = read_source(files, label_format, ImportOptions(class_map=config.get("class_map") or None))
    except (ArchiveError, SourceError) as exc:
        if diskspace.is_full(exc):  # the uncompressed copy found no room: not the archive's fault
            raise
        raise BuildError(str(exc)) from None
    skipped = [{"path": problem.file, "class": "", "split": "", "reason": _reason(problem.line, problem.reason)}
               for problem in found.problems]
    if not found.images:
        reasons = "; ".join(str(problem) for problem in found.problems[:FIRST_REASONS]) or "it holds no labelled image"
        raise BuildError(f"No usable image in the source: {reasons}.")
    items = [_item(files, annotated, found) for annotated in found.images]
    _split(items, [annotated.split for annotated in found.images], config)
    return Plan(found.classes, items, skipped, []), reader


def _reason(line: int | None, reason: str) -> str:
    return f"line {line}: {reason}" if line is not None else reason


def _item(files: SourceFiles, annotated: Annotated, found: Found) -> Item:
    where = files.path_or_member(annotated.image)
    target = planned_boxes(annotated, found.classes)
    if isinstance(where, str):
        return Item(where, target, "train")
    return Item(where.name, target, "train", member=where)


def planned_boxes(annotated: Annotated, classes: list[str]) -> PlannedBoxes:
    """An image's boxes and ignore regions as the target format places them."""
    index = {name: i for i, name in enumerate(classes)}
    label_file = annotated.label_file or annotated.image

    def row(box: Box, flags: int, label: int) -> list[float]:
        return [box.x1, box.y1, box.x2, box.y2, label, flags]

    rows = [row(box, DIFFICULT if box.difficult else 0, index[box.label]) for box in annotated.boxes]
    rows += [row(box, IGNORE, index.get(box.label, NO_CLASS)) for box in annotated.ignore]
    sources = [f"{label_file}, line {box.line}" if box.line is not None else label_file
               for box in [*annotated.boxes, *annotated.ignore]]
    return PlannedBoxes(np.array(rows, dtype=np.float64).reshape(-1, 6), annotated.fractions, sources)


def _split(items: list[Item], given: list[str | None], config: dict[str, Any]) -> None:
    """Images the source put in a split keep it; the others are shuffled (seeded) and split by the percentages."""
    free = []
    for item, split in zip(items, given, strict=True):
        if split is not None:
            item.split = split
        else:
            free.append(item)
    random.Random(config["seed"]).shuffle(free)
    n_val, n_test = split_counts(len(free), config["val_percent"], config["test_percent"])
    for position, item in enumerate(free):
        item.split = "val" if position < n_val else "test" if position < n_val + n_test else "train"
