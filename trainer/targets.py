"""What a dataset stores for each image beside its pixels: the targets its
task trains towards, in a format the task names (``Task.targets``).

The store (``datastore``) writes a split's targets through the format while
the build runs and reads them back for the trainer and the gallery. The
trainer batches a split's targets as one array whose first axis is the
images (``data.Batches`` selects rows of it, on the device or off it), so a
format keeps the same shape for every image of a split: one class index;
boxes padded to the most that any image of the split has
(``trainer.detection.targets``); a mask image.

What the pages show of targets goes through the format too, so a page needs
no task of its own: the classes an image shows and where (``shown``), and a
split's statistics (``statistics``), both plain JSON-serialisable values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np


class TargetError(Exception):
    """Why an image's target cannot be placed on its stored image (e.g. a box
    outside the image); the build skips the image with this reason."""


class TargetWriter(Protocol):
    """A split's targets while the build runs: one slot a planned image;
    ``save`` keeps those of the images stored, in store order."""

    def put(self, slot: int, target: object) -> None: ...

    def save(self, folder: Path, split: str, kept: np.ndarray) -> None: ...


class TargetFormat(Protocol):
    # Whether the build may decode a JPEG at a reduced size (a draft) before
    # resizing it, which moves its pixels by less than one of the stored
    # image's: not for a target placed pixel for pixel (a mask).
    allows_draft: bool

    def file(self, split: str) -> str: ...

    def placed(self, planned: Any, shown_size: tuple[int, int], decoded_size: tuple[int, int],
               options: dict[str, Any]) -> tuple[Any, dict[str, int]]:
        """In the build's pool: an image's target as its task's planner read
        it, placed on the stored image (the build's ``width``, ``height`` and
        ``resize_mode`` and its ``placing`` options), for the writer's
        ``put``; and what placing it counted. ``shown_size``: the source
        image's width and height; ``decoded_size``: the decoded image's,
        smaller after a JPEG draft decode. Raises TargetError."""
        ...

    def classes_in(self, stored: Any) -> list[int]:
        """The distinct classes a placed target shows (the manifest counts images per class)."""
        ...

    def planned_class(self, planned: Any, classes: list[str]) -> str:
        """The class a skipped image's report names ("" when not one)."""
        ...

    def writer(self, folder: Path, split: str, capacity: int) -> TargetWriter:
        """The writer of a split's targets in the build's ``folder``, where it may spool them."""
        ...

    def read(self, folder: Path, split: str) -> np.ndarray: ...

    def images_of_class(self, targets: np.ndarray, index: int) -> np.ndarray: ...

    def classes_of(self, targets: np.ndarray, position: int) -> list[int]: ...

    def shown(self, targets: np.ndarray, position: int) -> list[dict[str, Any]]:
        """What the gallery draws of an image: one dict a thing it shows,
        each with its ``class`` index."""
        ...

    def statistics(self, targets: np.ndarray, classes: list[str]) -> dict[str, Any]:
        """A split's statistics for its Explore page: at least ``images``
        (its count) and ``per_class``, a dict a class in class order with its
        ``name`` and ``images`` (the images showing it)."""
        ...


class ClassLabels:
    """One class index an image (int32): ``<split>-labels.npy``."""

    allows_draft = True

    def file(self, split: str) -> str:
        return f"{split}-labels.npy"

    def placed(self, planned: Any, shown_size: tuple[int, int], decoded_size: tuple[int, int],
               options: dict[str, Any]) -> tuple[int, dict[str, int]]:
        return int(planned), {}

    def classes_in(self, stored: Any) -> list[int]:
        return [int(stored)]

    def planned_class(self, planned: Any, classes: list[str]) -> str:
        return classes[int(planned)]

    def writer(self, folder: Path, split: str, capacity: int) -> TargetWriter:
        return _LabelWriter(self, capacity)

    def read(self, folder: Path, split: str) -> np.ndarray:
        return np.load(folder / self.file(split))

    def images_of_class(self, targets: np.ndarray, index: int) -> np.ndarray:
        """The positions of the images of class ``index``."""
        return np.flatnonzero(targets == index)

    def classes_of(self, targets: np.ndarray, position: int) -> list[int]:
        """The classes an image shows (the gallery names them)."""
        return [int(targets[position])]

    def shown(self, targets: np.ndarray, position: int) -> list[dict[str, Any]]:
        return [{"class": int(targets[position])}]

    def statistics(self, targets: np.ndarray, classes: list[str]) -> dict[str, Any]:
        """The images and the images per class (the manifest's ``per_class``)."""
        counts = np.bincount(targets, minlength=len(classes))
        if len(counts) > len(classes):
            raise ValueError(f"The targets name class {len(counts) - 1} of {len(classes)} classes.")
        return {"images": len(targets),
                "per_class": [{"name": name, "images": int(count)} for name, count in zip(classes, counts, strict=True)]}


class _LabelWriter:
    def __init__(self, labels: ClassLabels, capacity: int) -> None:
        self.labels = labels
        self.values = np.zeros(capacity, dtype=np.int32)

    def put(self, slot: int, target: object) -> None:
        self.values[slot] = int(target)  # type: ignore[call-overload]

    def save(self, folder: Path, split: str, kept: np.ndarray) -> None:
        np.save(folder / self.labels.file(split), self.values[kept])
