"""YOLO text labels: ``images/`` and ``labels/`` folders whose files match
but for the folder and the extension (``images/train/1.jpg`` and
``labels/train/1.txt``, or ``train/images/1.jpg`` and ``train/labels/1.txt``:
the last ``images`` folder of a path becomes ``labels``, as Ultralytics has
it). A ``train``, ``val``/``valid`` or ``test`` folder gives the split.

A line is ``class cx cy w h``: the class's index in the classes file
(``classes.txt``, ``obj.names``, or ``data.yaml``'s ``names``), then the
box's centre and size as fractions of the image's, each in [0, 1]. Boxes
stay fractions (``Annotated.fractions``) until the build knows the image's
size. An empty label file is an image without objects.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import yaml

from ..dataset_sources import SourceError
from ..safeyaml import AliasesRefused, refuse_aliases
from .annotations import Box, Found
from .common import BadLine, ClassMap, ImportOptions, choose_folders, found, number, pair, read_line_files, read_text
from .sourcefiles import SourceFiles

USUAL_FOLDERS = [(("images",), ("labels",))]
CLASS_FILES = ("classes.txt", "obj.names", "data.yaml")
VALUES = ("cx", "cy", "width", "height")


def classes_file(names: list[str]) -> str | None:
    """The classes file: the first kind of ``CLASS_FILES`` found, the one nearest the top."""
    for kind in CLASS_FILES:
        found_files = [name for name in names if PurePosixPath(name).name.lower() == kind]
        if found_files:
            return min(found_files, key=lambda name: name.count("/"))
    return None


def read_yolo(files: SourceFiles, options: ImportOptions) -> Found:
    """The source's images with their YOLO boxes as fractions; SourceError without a readable classes file or
    images and labels folders."""
    names = files.names()
    listing = classes_file(names)
    if listing is None:
        raise SourceError("No YOLO classes file found: expected classes.txt, obj.names or a data.yaml with names.")
    class_names = _class_names(files, listing, options)
    folders = choose_folders(names, options.folders(USUAL_FOLDERS), ".txt")
    if folders is None:
        raise SourceError("No YOLO folders found: expected images in an images folder and their .txt label files "
                          "in a labels folder beside it, or the folders named in the options.")
    classes = ClassMap(options.class_map, class_names)
    pairs = pair(names, *folders, ".txt", exclude={listing})

    def parse(words: list[str], folder: str) -> tuple[str, Box] | None:
        return _box(words, folder, class_names, listing, classes)

    images, problems = read_line_files(files, pairs, folders, options, parse, fractions=True)
    return found(images, classes, problems)


def _class_names(files: SourceFiles, listing: str, options: ImportOptions) -> list[str]:
    text, problem = read_text(files, listing, options)
    if problem is not None:
        raise SourceError(f"The classes file {problem}.")
    if not listing.lower().endswith(".yaml"):
        lines = [line.strip() for line in text.splitlines()]
        while lines and not lines[-1]:
            lines.pop()
        if "" in lines:
            raise SourceError(f"The classes file {listing} has an empty line {lines.index('') + 1}: each line names a class.")
        return lines
    try:
        refuse_aliases(text)
        names = (yaml.safe_load(text) or {}).get("names")
    except AliasesRefused as exc:
        raise SourceError(f"The classes file {listing}: {exc}.") from None
    except (yaml.YAMLError, AttributeError) as exc:
        raise SourceError(f"The classes file {listing} is not a YAML mapping with names ({exc}).") from exc
    if isinstance(names, dict) and sorted(names) == list(range(len(names))):
        names = [names[i] for i in range(len(names))]
    if not isinstance(names, list) or not names:
        raise SourceError(f"The classes file {listing} has no names: a list, or indices 0, 1... mapped to names.")
    return [str(name) for name in names]


def _box(words: list[str], folder: str, class_names: list[str], listing: str, classes: ClassMap) -> tuple[str, Box] | None:
    if len(words) != 5:
        raise BadLine(f"has {len(words)} columns; a YOLO line is 'class cx cy w h' (5)")
    if not (words[0].isascii() and words[0].isdigit()):
        raise BadLine(f"class '{words[0]}' is not a whole number")
    index = int(words[0])
    if index >= len(class_names):
        raise BadLine(f"class {index} is beyond the classes file ({listing} lists {len(class_names)}: "
                      f"0 to {len(class_names) - 1})")
    values = []
    for name, word in zip(VALUES, words[1:], strict=True):
        value = number(word)
        if value is None:
            raise BadLine(f"{name} '{word}' is not a number")
        if not 0 <= value <= 1:
            raise BadLine(f"{name} ({value:g}) is outside [0, 1]: YOLO values are fractions of the image's size")
        values.append(value)
    cx, cy, width, height = values
    for name, value in (("width", width), ("height", height)):
        if value == 0:
            raise BadLine(f"{name} is 0: the box has no {name}")
    label = classes.name(class_names[index], folder)
    if label is None:
        return None
    return "boxes", Box(cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2, label)
