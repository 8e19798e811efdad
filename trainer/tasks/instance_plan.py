"""Instance segmentation's dataset planner (``Task.plan``): a server folder
or an uploaded archive of images with their objects' masks, in one of two
layouts (the form's ``layout``, or found from the source):

- **coco**: COCO JSON annotations (``annotations/*.json`` or a ``.json`` at
  the top; ``instances_val…`` keeps its split), each annotation's polygons or
  RLE one object of its category (``trainer.segmentation.shapes`` reads and
  draws them, the categories in id order the classes), a crowd region kept
  as one that counts neither way;
- **voc**: Pascal VOC's, ``JPEGImages/`` with ``SegmentationObject/`` (each
  object's number) and ``SegmentationClass/`` (its class) label images and
  the splits in ``ImageSets/Segmentation/``; the classes are VOC's 20.

Each image whose objects cannot be read is reported with the file and why
and left out (in the plan for a missing partner, in the build's pool for a
label image that does not fit); the good images are kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer import diskspace
from trainer.archives import ArchiveError, MemberReader
from trainer.buildplan import BuildError, Item, Plan, split_by_percentages
from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Problem
from trainer.detection.common import swap_folder
from trainer.detection.sourcefiles import SourceFiles, open_source
from trainer.imageio import is_image
from trainer.instances.targets import MAX_CLASSES, PlannedObjects
from trainer.segmentation.labels import VOC_CLASSES, voc_colours
from trainer.segmentation.pairs import VOC_IMAGES, pair_images, voc_splits
from trainer.segmentation.shapes import has_coco_json, read_shapes

LAYOUTS = ("auto", "coco", "voc")
VOC_OBJECTS, VOC_CLASS_IMAGES = ("SegmentationObject",), ("SegmentationClass",)
FIRST_REASONS = 5


def plan(config: dict[str, Any], partial: Path, roots: list[Path]) -> tuple[Plan, MemberReader | None]:
    try:
        files, reader = open_source(config, partial, "instance segmentation")
        layout = chosen_layout(files, config.get("layout") or "auto")
        found = coco_plan(files) if layout == "coco" else voc_plan(files)
    except (ArchiveError, SourceError) as exc:
        if diskspace.is_full(exc):
            raise
        raise BuildError(str(exc)) from None
    classes, items, given, problems = found
    if not items:
        reasons = "; ".join(str(p) for p in problems[:FIRST_REASONS]) or "it holds no image with its objects"
        raise BuildError(f"No usable image in the source: {reasons}.")
    split_by_percentages(items, given, config)
    skipped = [{"path": p.file, "class": "", "split": "", "reason": p.reason} for p in problems]
    labelling = {"layout": layout, "colours": [list(colour) for colour in voc_colours(len(classes) + 1)[1:]]}
    return Plan(classes, items, skipped, [], labelling=labelling), reader


def chosen_layout(files: SourceFiles, chosen: str) -> str:
    """The layout named, or for "auto" VOC's when a ``SegmentationObject``
    folder holds label images, else COCO's when a JSON file is there;
    SourceError when neither is."""
    if chosen not in LAYOUTS:
        raise SourceError(f"Unknown layout “{chosen}”: the layouts are {', '.join(LAYOUTS)}.")
    if chosen != "auto":
        return chosen
    if any(is_image(name) and swap_folder(name, VOC_OBJECTS, VOC_OBJECTS) is not None for name in files.names()):
        return "voc"
    if has_coco_json(files):
        return "coco"
    raise SourceError("The source has neither a COCO JSON file of annotations nor Pascal VOC's SegmentationObject "
                      "folder: instance masks come from one of them.")


def _item(files: SourceFiles, image: str, target: Any) -> Item:
    where = files.path_or_member(image)
    return Item(where, target, "train") if isinstance(where, str) else Item(where.name, target, "train", member=where)


def coco_plan(files: SourceFiles) -> tuple[list[str], list[Item], list[str | None], list[Problem]]:
    """The classes (the categories), items, splits given and problems of a COCO source."""
    found = read_shapes(files)
    classes = found.classes[1:]  # the categories, without the background the semantic masks add
    if len(classes) > MAX_CLASSES:
        raise SourceError(f"{len(classes)} categories; a dataset holds at most {MAX_CLASSES} classes.")
    items = [_item(files, image, shapes) for image, shapes, _ in found.images]
    return classes, items, [split for _, _, split in found.images], found.problems


def voc_plan(files: SourceFiles) -> tuple[list[str], list[Item], list[str | None], list[Problem]]:
    """The classes (VOC's 20), items, splits given and problems of a VOC source."""
    classes, found, problems = voc_objects(files)
    return classes, [_item(files, image, target) for image, target, _ in found], [split for _, _, split in found], \
        problems


def voc_objects(files: SourceFiles) -> tuple[list[str], list[tuple[str, PlannedObjects, str | None]], list[Problem]]:
    """A VOC source's classes (VOC's 20), its images (name, objects, split
    given) and problems: each object image paired with its image and its
    class image."""
    paired = pair_images(files, VOC_IMAGES, VOC_OBJECTS, "voc")
    voc_splits(files, paired)
    classes = list(VOC_CLASSES[1:])
    names = set(files.names())
    found, problems = [], list(paired.problems)
    for pair in paired.pairs:
        partner = swap_folder(pair.label, VOC_OBJECTS, VOC_CLASS_IMAGES)
        if partner not in names:
            problems.append(Problem(pair.label, None, f"class image missing: no {partner} giving its objects' "
                                                      f"classes; the image is left out"))
            continue
        found.append((pair.image, PlannedObjects(files.path_or_member(pair.label), pair.label,
                                                 files.path_or_member(partner), partner, len(classes)), pair.split))
    problems.sort(key=lambda problem: problem.file)
    return classes, found, problems
