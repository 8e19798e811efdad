"""KITTI object labels, as NVIDIA DIGITS read them: an image folder and a
label folder of text files with the same names (``image_2/000001.png`` and
``label_2/000001.txt``, or ``images/`` and ``labels/``; nested folders keep
their paths on both sides).

A line is 15 space-separated columns (type, truncated, occluded, alpha, the
box's left, top, right and bottom, three dimensions, three locations,
rotation_y), or 16 with a detector's score, which is ignored. The box
columns are pixel coordinates taken as they are as continuous ones; the
other columns are not used. ``DontCare`` lines are regions left unlabelled
(``Annotated.ignore``), never a class. Type names match the class map
ignoring case, as DIGITS matched them.
"""

from __future__ import annotations

from ..dataset_sources import SourceError
from .annotations import Box, Found
from .common import (
    BadLine,
    ClassMap,
    ImportOptions,
    choose_folders,
    found,
    number,
    order_problem,
    pair,
    placement_problem,
    read_line_files,
)
from .sourcefiles import SourceFiles

USUAL_FOLDERS = [(("image_2",), ("label_2",)), (("images",), ("labels",))]
BOX_COLUMNS = {4: "left", 5: "top", 6: "right", 7: "bottom"}
DONT_CARE = "dontcare"


def read_kitti(files: SourceFiles, options: ImportOptions) -> Found:
    """The source's images with their KITTI boxes; SourceError when no image and label folders pair up."""
    names = files.names()
    folders = choose_folders(names, options.folders(USUAL_FOLDERS), ".txt")
    if folders is None:
        raise SourceError("No KITTI folders found: expected images in image_2 (or images) and their .txt label "
                          "files in label_2 (or labels), or the folders named in the options.")
    classes = ClassMap(options.class_map)
    pairs = pair(names, *folders, ".txt")
    images, problems = read_line_files(files, pairs, folders, options, lambda words, folder: _box(words, folder, classes))
    return found(images, classes, problems)


def _box(words: list[str], folder: str, classes: ClassMap) -> tuple[str, Box] | None:
    if len(words) not in (15, 16):
        raise BadLine(f"has {len(words)} columns; a KITTI line has 15 (16 with a score)")
    values = []
    for column, name in BOX_COLUMNS.items():
        value = number(words[column])
        if value is None:
            raise BadLine(f"{name} (column {column + 1}) '{words[column]}' is not a number")
        values.append(value)
    x1, y1, x2, y2 = values
    reason = (order_problem(("x1", x1), ("x2", x2), vertical=False) or order_problem(("y1", y1), ("y2", y2), vertical=True)
              or placement_problem(x1, y1, x2, y2, None))
    if reason:
        raise BadLine(reason)
    if words[0].lower() == DONT_CARE:
        return "ignore", Box(x1, y1, x2, y2, words[0])
    label = classes.name(words[0], folder)
    return None if label is None else ("boxes", Box(x1, y1, x2, y2, label))
