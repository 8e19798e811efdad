"""Masks drawn from COCO JSON annotations (polygons, uncompressed and
compressed RLE) rather than read from label images, torch-free.

The source's images and annotations are read by the detection import's COCO
reader (``trainer.detection.coco``: its files, splits, categories and every
problem with its reason); each annotation's ``segmentation`` is then drawn,
as pycocotools draws it, on the image as shown: class 0 is the background,
category ``k`` of the categories in id order is class ``k + 1``, and a crowd
region (``iscrowd``) is ignored, as COCO's evaluation ignores it. The shapes
are painted in the annotations' order, a later one over an earlier one.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from pycocotools import mask as coco_mask

from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Problem
from trainer.detection.coco import annotation_files, read_coco
from trainer.detection.common import ImportOptions, read_text
from trainer.detection.sourcefiles import SourceFiles
from trainer.targets import TargetError

from .labels import IGNORE, MAX_CLASSES

BACKGROUND = "background"


@dataclass(frozen=True)
class Shape:
    index: int  # the class painted, or IGNORE for a crowd region
    segmentation: Any  # the annotation's: a list of polygons or an RLE
    annotation: int  # its id, for the reasons given
    category: int  # its category's class, a crowd region's too (an instance's)


@dataclass(frozen=True)
class PlannedShapes:
    """An image's mask as its annotations draw it: ``label_file`` the JSON
    (as the user names it) they came from, ``shapes`` in their order."""

    label_file: str
    shapes: tuple[Shape, ...]


@dataclass
class CocoShapes:
    """A source's images, each with its ``PlannedShapes`` and the split the
    source gives it (or None); the ``classes`` (the background first); the
    ``problems`` found."""

    images: list[tuple[str, PlannedShapes, str | None]]
    classes: list[str]
    problems: list[Problem]


def read_shapes(files: SourceFiles) -> CocoShapes:
    """The source's COCO images with the shapes of their annotations;
    SourceError when it has no COCO JSON file or its categories cannot be
    classes."""
    found = read_coco(files, ImportOptions())
    if any(name.lower() == BACKGROUND for name in found.classes):
        raise SourceError("A category is named “background”: in masks drawn from COCO annotations, class 0 is the "
                          "background of every image, what no annotation covers. Rename the category.")
    if len(found.classes) + 1 > MAX_CLASSES:
        raise SourceError(f"{len(found.classes)} categories are one more class each beside the background; a dataset "
                          f"holds at most {MAX_CLASSES} classes.")
    classes = [BACKGROUND, *found.classes]
    segmentations, problems = _segmentations(files, {image.label_file for image in found.images}), list(found.problems)
    images = []
    for annotated in found.images:
        shapes = tuple(Shape(IGNORE if box.difficult else classes.index(box.label),
                             segmentations.get((annotated.label_file, box.line)), box.line, classes.index(box.label))
                       for box in annotated.boxes)
        images.append((annotated.image, PlannedShapes(annotated.label_file, shapes), annotated.split))
    return CocoShapes(images, classes, problems)


def _segmentations(files: SourceFiles, labels: set[str | None]) -> dict[tuple[str, int], Any]:
    """Each annotation's ``segmentation`` by its JSON file and id (the files the reader read whole already)."""
    found = {}
    for label in sorted(name for name in labels if name):
        text, problem = read_text(files, label, ImportOptions())
        data = json.loads(text) if problem is None else {}
        for annotation in data.get("annotations") or []:
            if isinstance(annotation, dict) and isinstance(annotation.get("id"), int):
                found[(label, annotation["id"])] = annotation.get("segmentation")
    return found


def has_coco_json(files: SourceFiles) -> bool:
    """Whether the source holds a JSON file the COCO reader would read."""
    return bool(annotation_files(files.names()))


def painted(planned: PlannedShapes, size: tuple[int, int]) -> np.ndarray:
    """The image's classes (H×W uint8) for an image shown ``size`` (width,
    height): its shapes painted over the background in order. TargetError,
    naming the annotation, for a segmentation that is neither polygons nor
    an RLE, or one of another size than the image."""
    width, height = size
    classes = np.zeros((height, width), dtype=np.uint8)
    for shape in planned.shapes:
        classes[drawn(shape, planned.label_file, width, height)] = shape.index
    return classes


def drawn(shape: Shape, label_file: str, width: int, height: int) -> np.ndarray:
    """Where the shape covers a ``width`` × ``height`` image (H×W bool);
    TargetError as ``painted``."""
    where = f"{label_file}, annotation {shape.annotation}"
    segmentation = shape.segmentation
    if isinstance(segmentation, list):
        if not segmentation or not all(_polygon(polygon) for polygon in segmentation):
            raise TargetError(f"{where}: its segmentation is not polygons (lists of at least 3 x, y points)")
        rle = coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
    elif isinstance(segmentation, dict) and _rle(segmentation):
        rle_height, rle_width = segmentation["size"]
        if (rle_width, rle_height) != (width, height):
            raise TargetError(f"{where}: its RLE is {rle_width}×{rle_height}, the image {width}×{height}")
        counts = segmentation["counts"]
        rle = (coco_mask.frPyObjects(segmentation, height, width) if isinstance(counts, list)
               else {"size": [height, width], "counts": counts.encode("ascii")})
    else:
        raise TargetError(f"{where}: it has no segmentation (polygons or an RLE) to draw its mask from")
    try:
        return decoded(rle)
    except (ValueError, TypeError) as exc:
        raise TargetError(f"{where}: its RLE cannot be decoded ({exc})") from None


def decoded(rle: Any) -> np.ndarray:
    """pycocotools' decode of an RLE (H×W bool) or of a list of them
    (H×W×N), without the warning it gives under numpy 2 about its own copy."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="pycocotools")
        return coco_mask.decode(rle).astype(bool)


def _polygon(polygon: Any) -> bool:
    return (isinstance(polygon, list) and len(polygon) >= 6 and len(polygon) % 2 == 0
            and all(isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v) for v in polygon))


def _rle(segmentation: dict[str, Any]) -> bool:
    size, counts = segmentation.get("size"), segmentation.get("counts")
    sized = isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size)
    counted = (isinstance(counts, str) and counts.isascii()) or (
        isinstance(counts, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts))
    return sized and counted
