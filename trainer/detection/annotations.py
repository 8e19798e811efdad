"""What a detection source holds once read, whatever its format: images with
their boxes, the class names, and the problems found, each with its file,
line and reason.

Coordinates are continuous pixels of the image as shown (after its EXIF
rotation): ``x1, y1`` the top-left corner, ``x2, y2`` the bottom-right one,
so that a box over a whole W×H image is ``0, 0, W, H``. Each importer
converts its format's convention to this one (VOC counts pixels from 1
inclusive; COCO gives x, y, width, height; YOLO fractions of the image's
size, kept as fractions here until the image's size is known).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Box:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str  # the class name, after the user's class map
    difficult: bool = False  # VOC "difficult", COCO "iscrowd": kept, flagged, not scored
    line: int | None = None  # the line (or, for COCO, the annotation id) it came from, for reports


@dataclass
class Annotated:
    image: str  # the image's name in the source (a relative path, "/"-separated)
    boxes: list[Box] = field(default_factory=list)
    # Regions whose objects are not labelled (KITTI's DontCare): no box may be
    # counted wrong inside them.
    ignore: list[Box] = field(default_factory=list)
    # True when the coordinates are fractions of the image's width and height
    # (YOLO): the build scales them once it has decoded the image.
    fractions: bool = False
    label_file: str | None = None  # where its boxes were read from, for reports
    # The split the source put it in ("train", "val" or "test": COCO's
    # instances_val.json, YOLO's images/val/), None when the source does not
    # say. Added for the formats that ship their splits: without it the build
    # would have to re-split images the user already kept apart.
    split: str | None = None


@dataclass(frozen=True)
class Problem:
    file: str  # as the user named it (relative to the source), never a server path
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}, line {self.line}" if self.line is not None else self.file
        return f"{where}: {self.reason}"


@dataclass
class Found:
    images: list[Annotated]
    classes: list[str]
    problems: list[Problem] = field(default_factory=list)
