"""Object detection's targets in the store: each image's boxes (``Boxes``, a
``trainer.targets.TargetFormat``).

Per split, ``<split>-boxes.npy``: one float32 array N×K×6, a row a box,
``x1, y1, x2, y2, class, flags``:

- the corners in continuous pixels of the stored (resized) image, as
  ``annotations`` has them (a box over a whole W×H image is 0, 0, W, H);
- the class index;
- flags: ``DIFFICULT`` (VOC "difficult", COCO "iscrowd": kept, not scored)
  and ``IGNORE`` (a region whose objects are not labelled, e.g. KITTI's
  DontCare: no detection inside it is counted wrong). An ignore region has
  the class it covers, or ``NO_CLASS`` when it covers every class.

An image's rows come first, in the order they were given; the rest of its K
rows are padding, zeros with class ``NO_CLASS`` and no flags. K is the most
rows any image of the split has, at least 1.

Elsewhere in this module, as on the pages, "boxes" are the objects: neither
padding nor ignore regions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainer.buildplan import pad_to
from trainer.imageio import placement
from trainer.targets import TargetError

from .boxgeometry import decode_factors, move_boxes

COLUMNS = 6  # x1, y1, x2, y2, class, flags
CLASS, FLAGS = 4, 5
DIFFICULT = 1
IGNORE = 2
NO_CLASS = -1

# Histogram bins, by their lower edges; the last is open-ended. Boxes per
# image, and box sides in pixels of the stored images (octaves).
PER_IMAGE_EDGES = (0, 1, 2, 3, 4, 5, 10, 20, 50, 100)
SIDE_EDGES = (0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)


# How far past its image's edge a box may reach and still be clipped to it
# (rounding in the tool that drew it) rather than reported.
OUTSIDE_TOLERANCE = 1.0
# The most boxes and ignore regions one image may have: every image of a split
# is stored with as many rows as its fullest (COCO's fullest has 93), so one
# image of a million boxes would cost every image 24 MB.
MAX_ROWS = 1000


@dataclass
class PlannedBoxes:
    """An image's boxes as the planner read them, before its image is
    decoded: rows in the stored layout but in pixels of the source image as
    shown (or fractions of its size, ``fractions``), and where each row came
    from, for the build's report."""

    rows: np.ndarray  # M×6 float64: x1, y1, x2, y2, class, flags
    fractions: bool
    sources: list[str]  # per row: "labels/3.txt, line 2"


class Boxes:
    """An image's boxes (see the module). The writer's ``put(slot, rows)``
    takes an image's rows as an M×6 array-like in the stored layout (M may
    be 0); ValueError for rows that break it. The build's ``placed`` takes
    ``PlannedBoxes``."""

    allows_draft = True

    def file(self, split: str) -> str:
        return f"{split}-boxes.npy"

    def placed(self, planned: PlannedBoxes, shown_size: tuple[int, int], decoded_size: tuple[int, int],
               options: dict[str, Any]) -> tuple[np.ndarray, dict[str, int]]:
        """The rows moved onto the stored image exactly as its pixels are
        (``imageio.placement``, with the build's ``placing`` options
        ``pad_width``, ``pad_height`` and ``min_box_size``). A box reaching
        past its image by more than ``OUTSIDE_TOLERANCE`` skips the image
        (TargetError naming its line); boxes smaller than ``min_box_size``
        on the stored image are left out and counted (``small_boxes``)."""
        if len(planned.rows) > MAX_ROWS:
            where = planned.sources[0].split(", line")[0]
            raise TargetError(f"{where}: {len(planned.rows)} boxes, more than the {MAX_ROWS} an image may have")
        width, height = shown_size
        rows = planned.rows.copy()
        if planned.fractions:
            rows[:, :4] *= [width, height, width, height]
        for (x1, y1, x2, y2), where in zip(rows[:, :4], planned.sources, strict=True):
            if min(x1, y1) < -OUTSIDE_TOLERANCE or x2 > width + OUTSIDE_TOLERANCE or y2 > height + OUTSIDE_TOLERANCE:
                raise TargetError(f"{where}: the box {x1:g}, {y1:g}, {x2:g}, {y2:g} reaches outside the "
                                  f"{width}×{height} image")
        rows[:, :4] /= np.tile(decode_factors(shown_size, decoded_size), 2)
        where_to = placement(*decoded_size, options["width"], options["height"], options["resize_mode"],
                             pad_to(options))
        min_size = float((options.get("placing") or {}).get("min_box_size") or 0.0)
        moved, kept = move_boxes(rows[:, :4], where_to, min_size)
        rows[:, :4] = moved
        ignore = rows[:, FLAGS].astype(np.int32) & IGNORE != 0
        small = ~kept & ~ignore
        present = kept | (ignore & (moved[:, 2] > moved[:, 0]) & (moved[:, 3] > moved[:, 1]))
        return rows[present].astype(np.float32), ({"small_boxes": int(small.sum())} if small.any() else {})

    def classes_in(self, stored: np.ndarray) -> list[int]:
        return sorted({int(c) for c in stored[objects(stored), CLASS]})

    def planned_class(self, planned: PlannedBoxes, classes: list[str]) -> str:
        return ""

    def writer(self, folder: Path, split: str, capacity: int) -> _BoxWriter:
        return _BoxWriter(self, capacity)

    def read(self, folder: Path, split: str) -> np.ndarray:
        return np.load(folder / self.file(split))

    def images_of_class(self, targets: np.ndarray, index: int) -> np.ndarray:
        """The positions of the images with a box of class ``index``."""
        return np.flatnonzero((objects(targets) & (targets[..., CLASS] == index)).any(axis=1))

    def classes_of(self, targets: np.ndarray, position: int) -> list[int]:
        """The distinct classes of an image's boxes, in order."""
        row = targets[position]
        return sorted({int(c) for c in row[objects(row), CLASS]})

    def shown(self, targets: np.ndarray, position: int) -> list[dict[str, Any]]:
        """An image's boxes and ignore regions, in stored order: ``x1``, ``y1``,
        ``x2``, ``y2`` (pixels of the stored image), ``class`` (None for an
        ignore region of every class), ``difficult``, ``ignore``."""
        row = targets[position]
        flags = row[:, FLAGS].astype(np.int32)
        kept = objects(row) | (flags & IGNORE != 0)
        return [{"x1": float(x1), "y1": float(y1), "x2": float(x2), "y2": float(y2),
                 "class": None if c == NO_CLASS else int(c), "difficult": bool(f & DIFFICULT), "ignore": bool(f & IGNORE)}
                for (x1, y1, x2, y2, c, _), f in zip(row[kept], flags[kept], strict=True)]

    def statistics(self, targets: np.ndarray, classes: list[str]) -> dict[str, Any]:
        """A split's boxes counted: ``images``; ``boxes``; ``boxes_per_image``
        (``mean``, ``max``, ``histogram``); the ``width`` and ``height``
        histograms of the boxes, in pixels of the stored images;
        ``per_class`` (``name``, ``boxes``, ``images`` with one of its boxes);
        ``images_without_boxes``; the boxes flagged ``difficult``; the
        ``ignore_regions``. A histogram is ``{"edges": [...], "counts": [...]}``,
        a count a bin from its edge to the next (the last open-ended)."""
        kept = objects(targets)
        found = targets[kept]
        labels = found[:, CLASS].astype(np.int64)
        if len(labels) and labels.max() >= len(classes):
            raise ValueError(f"The targets name class {labels.max()} of {len(classes)} classes.")
        per_image = kept.sum(axis=1)
        pairs = np.unique(np.stack([np.nonzero(kept)[0], labels]), axis=1)
        boxes_per_class = np.bincount(labels, minlength=len(classes))
        images_per_class = np.bincount(pairs[1], minlength=len(classes))
        return {
            "images": len(targets),
            "boxes": len(found),
            "boxes_per_image": {"mean": float(per_image.mean()) if len(targets) else 0.0,
                                "max": int(per_image.max(initial=0)),
                                "histogram": _histogram(per_image, PER_IMAGE_EDGES)},
            "width": _histogram(found[:, 2] - found[:, 0], SIDE_EDGES),
            "height": _histogram(found[:, 3] - found[:, 1], SIDE_EDGES),
            "per_class": [{"name": name, "boxes": int(boxes), "images": int(images)}
                          for name, boxes, images in zip(classes, boxes_per_class, images_per_class, strict=True)],
            "images_without_boxes": int((per_image == 0).sum()),
            "difficult": int((found[:, FLAGS].astype(np.int32) & DIFFICULT != 0).sum()),
            "ignore_regions": int((targets[..., FLAGS].astype(np.int32) & IGNORE != 0).sum()),
        }


class _BoxWriter:
    """Each image's rows as put, until ``save`` pads those kept into one array."""

    def __init__(self, boxes: Boxes, capacity: int) -> None:
        self.boxes, self.capacity = boxes, capacity
        self.rows: dict[int, np.ndarray] = {}

    def put(self, slot: int, target: object) -> None:
        if not 0 <= slot < self.capacity:
            raise IndexError(f"Slot {slot} is outside the {self.capacity} planned.")
        self.rows[slot] = _checked_rows(target)

    def save(self, folder: Path, split: str, kept: np.ndarray) -> None:
        chosen = [self.rows[int(slot)] for slot in kept]
        stored = np.zeros((len(chosen), max([1, *map(len, chosen)]), COLUMNS), dtype=np.float32)
        stored[..., CLASS] = NO_CLASS
        for position, rows in enumerate(chosen):
            stored[position, :len(rows)] = rows
        np.save(folder / self.boxes.file(split), stored)


def _checked_rows(target: object) -> np.ndarray:
    """An image's rows as a new float32 M×6 array; ValueError for rows that
    are not in the stored layout (corners out of order, a class that is not
    a whole number from 0, or ``NO_CLASS`` outside an ignore region,
    unknown flags)."""
    rows = np.array(target, dtype=np.float32)
    if rows.size == 0:
        rows = rows.reshape(0, COLUMNS)
    if rows.ndim != 2 or rows.shape[1] != COLUMNS:
        raise ValueError(f"An image's boxes are an M×{COLUMNS} array, not one of shape {rows.shape}.")
    labels, flags = rows[:, CLASS], rows[:, FLAGS]
    if not np.isfinite(rows).all():
        raise ValueError("A box has a coordinate that is not a number.")
    if (rows[:, 2] < rows[:, 0]).any() or (rows[:, 3] < rows[:, 1]).any():
        raise ValueError("A box's second corner is above or left of its first.")
    if (labels != np.floor(labels)).any() or (labels < NO_CLASS).any() or \
            ((labels == NO_CLASS) & (flags.astype(np.int32) & IGNORE == 0)).any():
        raise ValueError(f"A box's class is a whole number from 0 ({NO_CLASS} only for an ignore region).")
    if (flags != np.floor(flags)).any() or (flags < 0).any() or (flags > DIFFICULT | IGNORE).any():
        raise ValueError(f"A box's flags are {DIFFICULT} (difficult), {IGNORE} (ignore region) or both.")
    return rows


def objects(targets: np.ndarray) -> np.ndarray:
    """Which rows of ``targets`` (any number of leading axes) are boxes:
    neither padding nor ignore regions."""
    return (targets[..., CLASS] >= 0) & (targets[..., FLAGS].astype(np.int32) & IGNORE == 0)


def _histogram(values: np.ndarray, edges: tuple[int, ...]) -> dict[str, list[int]]:
    bins = np.searchsorted(edges, values, side="right") - 1
    return {"edges": list(edges), "counts": np.bincount(bins, minlength=len(edges)).tolist()}
