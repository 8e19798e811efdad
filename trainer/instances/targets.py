"""Instance segmentation's targets in the store: each image's objects, a
mask and a class each (``Instances``, a ``trainer.targets.TargetFormat``).

Per split, ``<split>-instances.npy``: one uint8 array N×H×W×2 (H×W as the
images), two values a pixel:

- ``[..., CLASS]``: 0 where no object is, ``k + 1`` on an object of class
  ``k`` (a crowd region's class too);
- ``[..., INSTANCE]``: 0 where no object is, the object's number (1 to
  ``MAX_INSTANCES``, distinct within its image) on an object, ``CROWD`` on a
  region of many objects not told apart (COCO's ``iscrowd``), which the
  metric neither rewards nor counts against a model.

One object a pixel: where a source's masks overlap, the smaller object is
kept on top (it is painted last), so that an object inside another stays
whole. Both maps are placed on the stored image by the same
``imageio.Placement`` as its pixels, by nearest neighbour
(``imageio.place_labels``), padding and borders holding no object; an
object a resize leaves no pixel of is gone. The image is decoded whole for
that (``allows_draft``). The array is memory-mapped when read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainer.archives import Entry
from trainer.buildplan import pad_to
from trainer.detection.targets import PER_IMAGE_EDGES, SIDE_EDGES
from trainer.imageio import ImageError, load_label_image, place_labels, placement
from trainer.segmentation.labels import IGNORE, values
from trainer.segmentation.shapes import PlannedShapes, drawn
from trainer.segmentation.targets import CHUNK_IMAGES, SpooledWriter
from trainer.targets import TargetError

CLASS, INSTANCE = 0, 1
CROWD = 255
MAX_INSTANCES = 254  # numbers 1 to 254 a stored image
MAX_CLASSES = 254  # stored as 1 to 254
VOC_VOID = 255  # the border VOC's label images draw round each object: no object
# A found object's mask: the pixels Mask R-CNN's mask head gives at least this probability.
MASK_THRESHOLD = 0.5


@dataclass(frozen=True)
class PlannedObjects:
    """An image's objects as VOC's label images give them: ``objects`` its
    ``SegmentationObject`` image (each object's number, 0 none, 255 the
    border), ``classes`` its ``SegmentationClass`` image (VOC's class values,
    0 the background); each a path or the archive's member, with its name as
    the user knows it."""

    objects: str | Entry
    objects_name: str
    classes: str | Entry
    classes_name: str
    count: int  # the dataset's classes: VOC's values 1 to count


def painted_objects(planned: PlannedShapes, size: tuple[int, int]) -> np.ndarray:
    """The image's objects (H×W×2 uint8, as stored) drawn from its COCO
    shapes on an image shown ``size`` (width, height), larger ones first;
    crowd regions as ``CROWD``. TargetError for a shape ``shapes.drawn``
    cannot draw, or more objects than one image stores. Each shape is drawn
    once to measure it and again to paint it, so that one mask of the
    image's size is held at a time, however many objects a photo has."""
    width, height = size
    objects = [shape for shape in planned.shapes if shape.index != IGNORE]
    if len(objects) > MAX_INSTANCES:
        raise TargetError(f"{planned.label_file}: the image has {len(objects)} objects; one image holds at most "
                          f"{MAX_INSTANCES}")
    stored = np.zeros((height, width, 2), dtype=np.uint8)
    for shape in planned.shapes:
        if shape.index == IGNORE:
            stored[drawn(shape, planned.label_file, width, height)] = (shape.category, CROWD)
    areas = [int(drawn(shape, planned.label_file, width, height).sum()) for shape in objects]
    for number in sorted(range(1, len(objects) + 1), key=lambda n: -areas[n - 1]):
        stored[drawn(objects[number - 1], planned.label_file, width, height)] = (objects[number - 1].category, number)
    return stored


def read_objects(planned: PlannedObjects, size: tuple[int, int], read: Any = None) -> np.ndarray:
    """The image's objects (H×W×2 uint8, as stored) from its VOC label images,
    each object of the class its pixels have in the class image. TargetError
    naming the file: not an image, not its image's size, an object with no
    class or of two, a class past the dataset's. ``read`` reads an archive's
    member (its ``read``)."""
    objects = _values(planned.objects, planned.objects_name, size, read)
    labelled = _values(planned.classes, planned.classes_name, size, read)
    stored = np.zeros((size[1], size[0], 2), dtype=np.uint8)
    numbers = [int(n) for n in np.unique(objects) if 0 < n < VOC_VOID]
    if len(numbers) > MAX_INSTANCES:
        raise TargetError(f"label image {planned.objects_name} has {len(numbers)} objects; one image holds at most "
                          f"{MAX_INSTANCES}")
    for number in numbers:
        where = objects == number
        found = np.unique(labelled[where])
        found = found[found != VOC_VOID]
        if len(found) != 1 or found[0] == 0:
            said = "no class" if len(found) == 0 or (len(found) == 1 and found[0] == 0) else \
                f"the classes {', '.join(map(str, found.tolist()))}"
            raise TargetError(f"object {number} of {planned.objects_name} has {said} in {planned.classes_name}")
        if found[0] > planned.count:
            raise TargetError(f"object {number} of {planned.objects_name} is class value {int(found[0])} in "
                              f"{planned.classes_name}, past the {planned.count} classes")
        stored[where] = (found[0], number)
    return stored


def _values(source: str | Entry, name: str, size: tuple[int, int], read: Any) -> np.ndarray:
    data = source if isinstance(source, str) else read(source)
    try:
        image = load_label_image(data)
    except ImageError as exc:
        raise TargetError(f"label image {name}: {exc}") from None
    if image.size != size:
        raise TargetError(f"label image {name} is {image.width}×{image.height}, its image {size[0]}×{size[1]}")
    return values(image)


class Instances:
    """An image's objects (see the module). The writer's ``put(slot, target)``
    takes an H×W×2 uint8 array; the build's ``placed`` takes
    ``PlannedShapes`` (COCO) or ``PlannedObjects`` (VOC)."""

    allows_draft = False

    def file(self, split: str) -> str:
        return f"{split}-instances.npy"

    def placed(self, planned: PlannedShapes | PlannedObjects, shown_size: tuple[int, int],
               decoded_size: tuple[int, int], options: dict[str, Any]) -> tuple[np.ndarray, dict[str, int]]:
        if isinstance(planned, PlannedShapes):
            found = painted_objects(planned, shown_size)
        else:
            archive = options.get("archive")
            found = read_objects(planned, shown_size, archive.read if archive is not None else None)
        where = placement(*decoded_size, options["width"], options["height"], options["resize_mode"], pad_to(options))
        return np.stack([place_labels(found[..., channel], where, 0) for channel in (CLASS, INSTANCE)], axis=-1), {}

    def classes_in(self, stored: np.ndarray) -> list[int]:
        on = (stored[..., INSTANCE] > 0) & (stored[..., INSTANCE] != CROWD)
        return [int(value) - 1 for value in np.unique(stored[..., CLASS][on])]

    def planned_class(self, planned: Any, classes: list[str]) -> str:
        return ""

    def writer(self, folder: Path, split: str, capacity: int) -> SpooledWriter:
        return SpooledWriter(self.file(split), folder, split, capacity, ndim=3)

    def read(self, folder: Path, split: str) -> np.ndarray:
        return np.load(folder / self.file(split), mmap_mode="r")

    def images_of_class(self, targets: np.ndarray, index: int) -> np.ndarray:
        """The positions of the images with an object of class ``index``."""
        return np.flatnonzero([index in self.classes_in(np.asarray(targets[i])) for i in range(len(targets))])

    def classes_of(self, targets: np.ndarray, position: int) -> list[int]:
        return self.classes_in(np.asarray(targets[position]))

    def shown(self, targets: np.ndarray, position: int) -> list[dict[str, Any]]:
        """An image's objects, each with its ``class``, ``instance`` number,
        ``pixels`` and ``box`` (x1, y1, x2, y2 in continuous pixels)."""
        return objects_of(np.asarray(targets[position]))

    def statistics(self, targets: np.ndarray, classes: list[str]) -> dict[str, Any]:
        """A split's objects counted: ``images``, ``objects``, ``crowd_images``
        (images with a crowd region), per class its ``images``, ``objects``,
        ``pixels`` and ``share`` of the objects' pixels; histograms of the
        objects per image and of their sides (the square root of their area,
        in pixels of the stored images), by the lower edges of their bins."""
        per_images = np.zeros(len(classes), dtype=np.int64)
        per_objects = np.zeros(len(classes), dtype=np.int64)
        per_pixels = np.zeros(len(classes), dtype=np.int64)
        counts, sides, crowded = [], [], 0
        for start in range(0, len(targets), CHUNK_IMAGES):
            for stored in np.asarray(targets[start:start + CHUNK_IMAGES]):
                found = objects_of(stored)
                crowded += bool((stored[..., INSTANCE] == CROWD).any())
                counts.append(len(found))
                seen = set()
                for item in found:
                    if item["class"] >= len(classes):
                        raise ValueError(f"An object is class {item['class']}, past the {len(classes)} classes.")
                    per_objects[item["class"]] += 1
                    per_pixels[item["class"]] += item["pixels"]
                    sides.append(item["pixels"] ** 0.5)
                    seen.add(item["class"])
                for index in seen:
                    per_images[index] += 1
        total = int(per_pixels.sum())
        return {
            "images": len(targets), "objects": int(per_objects.sum()), "crowd_images": crowded,
            "per_class": [{"name": name, "images": int(images), "objects": int(objects), "pixels": int(pixels),
                           "share": float(pixels / total) if total else 0.0}
                          for name, images, objects, pixels in zip(classes, per_images, per_objects, per_pixels,
                                                                   strict=True)],
            "per_image": _histogram(counts, PER_IMAGE_EDGES), "sides": _histogram(sides, SIDE_EDGES),
        }

    def mask(self, targets: np.ndarray, position: int) -> np.ndarray:
        """An image's objects for the gallery (H×W×3 uint8): red its
        classes (an object's class, ``SHOWN_CROWD`` on a crowd region,
        ``SHOWN_NONE`` elsewhere), green each pixel's object number (the
        gallery outlines each object), blue 0."""
        stored = np.asarray(targets[position])
        shown = np.where(stored[..., INSTANCE] > 0, stored[..., CLASS].astype(np.int16) - 1, SHOWN_NONE)
        shown = np.where(stored[..., INSTANCE] == CROWD, SHOWN_CROWD, shown).astype(np.uint8)
        return np.stack([shown, stored[..., INSTANCE], np.zeros_like(shown)], axis=-1)


# The gallery's values beside the classes (0 to MAX_CLASSES - 1): crowd
# regions are its "ignored" pixels, and where no object is it draws nothing.
SHOWN_CROWD = 255
SHOWN_NONE = 254


def objects_of(stored: np.ndarray) -> list[dict[str, Any]]:
    """The objects of one stored image (H×W×2), in number order: ``class``,
    ``instance``, ``pixels``, ``box``."""
    numbers = stored[..., INSTANCE]
    found = []
    for number in np.unique(numbers):
        if number == 0 or number == CROWD:
            continue
        rows, cols = np.nonzero(numbers == number)
        found.append({"class": int(stored[rows[0], cols[0], CLASS]) - 1, "instance": int(number),
                      "pixels": len(rows),
                      "box": [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1]})
    return found


def boxes_shown(stored: np.ndarray) -> list[dict[str, Any]]:
    """One stored image's objects as detection's reports draw boxes
    (``detection.targets.Boxes.shown``): the box round each object, and
    round each class's crowd region as an ignore region of its class."""
    boxes = [{"x1": float(x1), "y1": float(y1), "x2": float(x2), "y2": float(y2), "class": item["class"],
              "difficult": False, "ignore": False} for item in objects_of(stored) for x1, y1, x2, y2 in [item["box"]]]
    crowd = stored[..., INSTANCE] == CROWD
    for value in np.unique(stored[..., CLASS][crowd]):
        rows, cols = np.nonzero(crowd & (stored[..., CLASS] == value))
        boxes.append({"x1": float(cols.min()), "y1": float(rows.min()), "x2": float(cols.max() + 1),
                      "y2": float(rows.max() + 1), "class": int(value) - 1, "difficult": False, "ignore": True})
    return boxes


def _histogram(found: list[float], edges: tuple[int, ...]) -> dict[str, list[int]]:
    """``found`` counted in the bins of lower ``edges`` (the last open-ended), as detection's histograms are."""
    bins = np.digitize(np.asarray(found, dtype=np.float64), edges) - 1 if found else np.zeros(0, dtype=np.int64)
    return {"edges": list(edges), "counts": np.bincount(bins, minlength=len(edges)).tolist()}

