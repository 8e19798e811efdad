"""Semantic segmentation's targets in the store: each image's mask
(``Masks``, a ``trainer.targets.TargetFormat``).

Per split, ``<split>-masks.npy``: one uint8 array N×H×W, the class of each
pixel of the stored image (H×W as the images), ``labels.IGNORE`` where a
pixel counts for nothing (the source's ignore value, the padding and the
border a resize adds). It is memory-mapped when read.

A mask is placed on its stored image by the same ``imageio.Placement`` as
the pixels, by nearest neighbour (``imageio.place_labels``), so it stays
aligned with them in every resize mode. The image is decoded whole for that
(no JPEG draft decode: ``allows_draft``), so both are placed from one size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainer.archives import Entry
from trainer.buildplan import pad_to
from trainer.imageio import place_labels, placement

from .labels import IGNORE, Coding, read_classes
from .shapes import PlannedShapes, painted

SPOOL_SUFFIX = "-masks.spool"
# Images whose masks are counted at once (statistics, the gallery's class filter).
CHUNK_IMAGES = 64


@dataclass(frozen=True)
class PlannedMask:
    """An image's label image as the planner found it: where the pool reads
    it (a path, or the archive's member), its name as the user knows it, and
    how its values become classes."""

    label: str | Entry
    name: str
    coding: Coding


class Masks:
    """An image's mask (see the module). The writer's ``put(slot, mask)``
    takes an H×W uint8 array; the build's ``placed`` takes ``PlannedMask``."""

    allows_draft = False

    def file(self, split: str) -> str:
        return f"{split}-masks.npy"

    def placed(self, planned: PlannedMask | PlannedShapes, shown_size: tuple[int, int], decoded_size: tuple[int, int],
               options: dict[str, Any]) -> tuple[np.ndarray, dict[str, int]]:
        """The label image read (TargetError: not an image, not its image's
        size, a value or colour that is no class), or the COCO shapes drawn
        (``shapes.painted``), and placed on the stored image as its pixels are."""
        if isinstance(planned, PlannedShapes):
            classes = painted(planned, shown_size)
        else:
            source = planned.label if isinstance(planned.label, str) else options["archive"].read(planned.label)
            classes = read_classes(source, planned.coding, planned.name, shown_size)
        where = placement(*decoded_size, options["width"], options["height"], options["resize_mode"], pad_to(options))
        return place_labels(classes, where, IGNORE), {}

    def classes_in(self, stored: np.ndarray) -> list[int]:
        return np.flatnonzero(np.bincount(stored.ravel(), minlength=256)[:IGNORE]).tolist()

    def planned_class(self, planned: PlannedMask, classes: list[str]) -> str:
        return ""

    def writer(self, folder: Path, split: str, capacity: int) -> SpooledWriter:
        return SpooledWriter(self.file(split), folder, split, capacity)

    def read(self, folder: Path, split: str) -> np.ndarray:
        return np.load(folder / self.file(split), mmap_mode="r")

    def images_of_class(self, targets: np.ndarray, index: int) -> np.ndarray:
        """The positions of the images with a pixel of class ``index``."""
        return np.flatnonzero(pixel_counts(targets)[:, index])

    def classes_of(self, targets: np.ndarray, position: int) -> list[int]:
        return self.classes_in(np.asarray(targets[position]))

    def shown(self, targets: np.ndarray, position: int) -> list[dict[str, Any]]:
        """The classes an image's mask shows, each with its ``pixels``."""
        counts = np.bincount(np.asarray(targets[position]).ravel(), minlength=256)
        return [{"class": int(c), "pixels": int(counts[c])} for c in np.flatnonzero(counts[:IGNORE])]

    def statistics(self, targets: np.ndarray, classes: list[str]) -> dict[str, Any]:
        """A split's masks counted: ``images``, ``pixels`` (all of them),
        ``ignored`` (pixels of no class) and ``per_class`` (``name``,
        ``images`` showing it, its ``pixels`` and ``share`` of the pixels
        that have a class)."""
        counts = pixel_counts(targets)
        if counts[:, len(classes):IGNORE].any():
            raise ValueError(f"The masks name a class past the {len(classes)} classes.")
        per_class = counts[:, :len(classes)].sum(axis=0)
        labelled = int(per_class.sum())
        return {
            "images": len(targets), "pixels": int(counts.sum()), "ignored": int(counts[:, IGNORE].sum()),
            "per_class": [{"name": name, "images": int(images), "pixels": int(pixels),
                           "share": pixels / labelled if labelled else 0.0}
                          for name, images, pixels in zip(classes, (counts[:, :len(classes)] > 0).sum(axis=0),
                                                          per_class, strict=True)],
        }

    def mask(self, targets: np.ndarray, position: int) -> np.ndarray:
        """An image's mask (H×W uint8), for the gallery to draw."""
        return np.asarray(targets[position])


def pixel_counts(targets: np.ndarray) -> np.ndarray:
    """Per image, its pixels of each value (N×256 int64; ``IGNORE`` last),
    read a chunk of images at a time."""
    counts = np.zeros((len(targets), 256), dtype=np.int64)
    for start in range(0, len(targets), CHUNK_IMAGES):
        chunk = np.asarray(targets[start:start + CHUNK_IMAGES])
        n = len(chunk)
        offsets = (np.arange(n, dtype=np.int64) * 256)[:, None]
        counts[start:start + n] = np.bincount((chunk.reshape(n, -1) + offsets).ravel(),
                                              minlength=n * 256).reshape(n, 256)
    return counts


class SpooledWriter:
    """Each target (a uint8 array of ``ndim`` axes, the same shape for every
    image) put into its slot of a spool file beside the split; ``save``
    copies those kept, in order, into the split's ``.npy`` (``file``) a
    chunk at a time, so the build's memory does not grow with its targets."""

    def __init__(self, file: str, folder: Path, split: str, capacity: int, ndim: int = 2) -> None:
        self.file, self.folder, self.split, self.capacity, self.ndim = file, folder, split, capacity, ndim
        self.spool = folder / f"{split}{SPOOL_SUFFIX}"
        self.shape: tuple[int, ...] | None = None
        self.handle: int | None = None

    def put(self, slot: int, target: object) -> None:
        if not 0 <= slot < self.capacity:
            raise IndexError(f"Slot {slot} is outside the {self.capacity} planned.")
        mask = np.ascontiguousarray(target, dtype=np.uint8)
        if mask.ndim != self.ndim or self.shape not in (None, mask.shape):
            raise ValueError(f"A target is one array of {self.ndim} axes the shape of the others, not one of shape "
                             f"{mask.shape}.")
        if self.handle is None:
            self.shape = tuple(int(side) for side in mask.shape)
            self.handle = os.open(self.spool, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            os.ftruncate(self.handle, self.capacity * mask.nbytes)  # every slot, a skipped image's too
        os.pwrite(self.handle, mask, slot * mask.nbytes)

    def save(self, folder: Path, split: str, kept: np.ndarray) -> None:
        shape = self.shape or (0,) * self.ndim
        stored = np.lib.format.open_memmap(folder / self.file, mode="w+", dtype=np.uint8, shape=(len(kept), *shape))
        if self.handle is not None:
            os.close(self.handle)
            spooled = np.memmap(self.spool, dtype=np.uint8, mode="r", shape=(self.capacity, *shape))
            for start in range(0, len(kept), CHUNK_IMAGES):
                stored[start:start + CHUNK_IMAGES] = spooled[kept[start:start + CHUNK_IMAGES]]
            del spooled
            self.spool.unlink()
        stored.flush()
        del stored
