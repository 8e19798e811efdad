"""Object detection's dataset planner (``Task.plan``): a server folder or an
uploaded archive of images with labels in KITTI, Pascal VOC, COCO or YOLO
format (``trainer.detection.importer``), guessed from the layout when the
user does not say. Every bad file or line is reported with its file, line
and reason, and its image left out; the good images are kept. Images the
source puts in a split (COCO's instances_val.json, YOLO's images/val/) stay
in it; the others are split by the percentages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from trainer import diskspace
from trainer.archives import ArchiveError, MemberReader
from trainer.buildplan import BuildError, Item, Plan, split_by_percentages
from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Annotated, Box, Found
from trainer.detection.common import ImportOptions
from trainer.detection.importer import chosen_format, read_source
from trainer.detection.sourcefiles import SourceFiles, open_source
from trainer.detection.targets import DIFFICULT, IGNORE, NO_CLASS, PlannedBoxes

# The reasons an import with no usable image fails with.
FIRST_REASONS = 5


def plan(config: dict[str, Any], partial: Path, roots: list[Path]) -> tuple[Plan, MemberReader | None]:
    try:
        files, reader = open_source(config, partial, "detection")
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
    split_by_percentages(items, [annotated.split for annotated in found.images], config)
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
