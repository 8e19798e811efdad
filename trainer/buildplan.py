"""What a dataset build is asked to make, whatever the task: each image's
source, its target and its split (``Item``), the classes, and what was left
out before any image was decoded. A task's planner (``Task.plan``) reads the
build's source into a ``Plan``; the build (``trainer.dataset_build``)
decodes, resizes and stores it."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .archives import Entry

SPLITS = ("train", "val", "test")
# A compressed tar's uncompressed copy, beside the dataset being built, read in
# place by the build's pool and deleted when it is done.
UNCOMPRESSED_ARCHIVE = "archive.tar"


class BuildError(Exception):
    """A problem with the whole build (not one file); its message is shown to the user."""


@dataclass
class Item:
    path: str  # a file's path, or an archive member's name as the archive spells it
    # What the image trains towards, as the task's planner read it; the task's
    # target format places it on the stored image (``TargetFormat.placed``).
    target: Any
    split: str
    member: Entry | None = None


@dataclass
class Plan:
    classes: list[str]
    items: list[Item]
    # Files left out, each {"path", "class", "split", "reason"} ("class" may be "").
    skipped: list[dict[str, Any]]
    warnings: list[str]
    # What the planner read of the source that the dataset's pages show
    # (how its labels were read, their colours), the manifest's ``labelling``.
    labelling: dict[str, Any] = field(default_factory=dict)
    # The classes are the indices the stored targets hold, none named by the
    # source: once the build has stored them all, ``classes`` is "class 0"
    # to the highest found.
    unnamed_classes: bool = False


def numbered_classes(count: int) -> list[str]:
    """The names of ``count`` classes the source did not name."""
    return [f"class {index}" for index in range(count)]


def pad_to(options: dict[str, Any]) -> tuple[int, int] | None:
    """The size a build's ``placing`` options pad each image to before the
    resize (DIGITS' padding, at the right and bottom), or None."""
    placing = options.get("placing") or {}
    return (int(placing["pad_width"]), int(placing["pad_height"])) if placing.get("pad_width") else None


def split_counts(n: int, val_percent: float, test_percent: float) -> tuple[int, int]:
    """Validation and test counts for a group of ``n`` images, leaving at least one for training."""
    n_val, n_test = round(n * val_percent / 100), round(n * test_percent / 100)
    while n_val + n_test >= n and n_val + n_test > 0:
        if n_val >= n_test:
            n_val -= 1
        else:
            n_test -= 1
    return n_val, n_test


def split_by_percentages(items: list[Item], given: list[str | None], config: dict[str, Any]) -> None:
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
