"""COCO JSON annotations, indexed by pycocotools as the COCO tools index them.

The JSON files are ``annotations/*.json``, else the ``.json`` files at the
top, else those anywhere (Roboflow puts one in each split's folder). With
several, each file's split comes from its name or folder (``instances_
val2017.json``, ``valid/_annotations.coco.json``). An image's
``file_name`` is looked for next to its JSON, then from the top, then as
the end of one path in the source (``images/train2017/1.jpg`` for
``1.jpg``; a folder named like the JSON's last word, ``train2017``, settles
a tie).

A box is ``[x, y, width, height]`` in pixels; ``iscrowd`` becomes
``Box.difficult`` and ``Box.line`` holds the annotation's id. The classes
are the categories in id order. Problems name the image or annotation by
its id (or its place in its list when it has none); their line is None,
but for a file that is not valid JSON.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from pycocotools.coco import COCO

from ..dataset_sources import SourceError
from .annotations import Annotated, Box, Found, Problem
from .common import SPLIT_NAMES, ClassMap, ImportOptions, found, placement_problem, read_text, split_of
from .sourcefiles import SourceFiles

SPLIT_WORD = re.compile(r"(?<![a-z])(train|validation|valid|val|test)", re.IGNORECASE)


def annotation_files(names: list[str]) -> list[str]:
    jsons = [name for name in names if name.lower().endswith(".json")]
    for chosen in ([n for n in jsons if "annotations" in n.lower().split("/")[:-1]], [n for n in jsons if "/" not in n]):
        if chosen:
            return chosen
    return jsons


def read_coco(files: SourceFiles, options: ImportOptions) -> Found:
    """The images of the source's COCO JSON files with their boxes; SourceError when it has no JSON file."""
    names = files.names()
    jsons = annotation_files(names)
    if not jsons:
        raise SourceError("No COCO JSON file found: expected annotations/*.json or a .json file at the top.")
    by_name: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_name[PurePosixPath(name).name].append(name)
    classes = ClassMap(options.class_map, [])
    images, problems = [], []
    for label in jsons:
        split = _split(label) if len(jsons) > 1 else None
        reader = _Reader(label, split, set(names), by_name, classes)
        text, problem = read_text(files, label, options)
        if problem is not None:
            problems.append(problem)
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(Problem(label, exc.lineno, f"not valid JSON ({exc.msg})"))
            continue
        except RecursionError:  # arrays or objects nested thousands deep: no COCO file is
            problems.append(Problem(label, None, "not a COCO file: its JSON is nested too deeply"))
            continue
        images.extend(reader.read(data))
        problems.extend(reader.problems)
    return found(images, classes, problems)


def _split(label: str) -> str | None:
    word = SPLIT_WORD.search(PurePosixPath(label).stem)
    return SPLIT_NAMES[word.group(1).lower()] if word else split_of(label)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Reader:
    """One JSON file's images; ``problems`` collects why some are left out."""

    def __init__(self, label: str, split: str | None, known: set[str], by_name: dict[str, list[str]],
                 classes: ClassMap) -> None:
        self.label, self.split, self.known, self.by_name, self.classes = label, split, known, by_name, classes
        self.problems: list[Problem] = []
        self.bad_images: set[int] = set()
        self.image_ids: set[int] = set()

    def note(self, reason: str) -> None:
        self.problems.append(Problem(self.label, None, reason))

    def read(self, data: Any) -> list[Annotated]:
        if not (isinstance(data, dict) and isinstance(data.get("images"), list)
                and isinstance(data.get("categories"), list) and isinstance(data.get("annotations", []), list)):
            self.note("not a COCO annotation file: it needs 'images' and 'categories' lists (and 'annotations')")
            return []
        coco = COCO()
        coco.dataset = {"images": self._images(data["images"]), "categories": self._categories(data["categories"]),
                        "annotations": self._annotations(data.get("annotations", []))}
        with contextlib.redirect_stdout(io.StringIO()):
            coco.createIndex()
        self.classes.listed.extend(coco.cats[i]["name"] for i in sorted(coco.cats))
        images = []
        for image in coco.dataset["images"]:
            annotated = self._image(coco, image)
            if annotated is not None and image["id"] not in self.bad_images:
                images.append(annotated)
        return images

    def _images(self, entries: list[Any]) -> list[dict[str, Any]]:
        kept, ids = [], set()
        for index, entry in enumerate(entries):
            if not (isinstance(entry, dict) and _id(entry.get("id")) and isinstance(entry.get("file_name"), str)):
                self.note(f"image {index} of the images list needs a whole-number id and a file_name")
            elif entry["id"] in ids:
                self.note(f"image id {entry['id']} appears twice in the images list; the second is left out")
            else:
                ids.add(entry["id"])
                kept.append(entry)
        self.image_ids = ids
        return kept

    def _categories(self, entries: list[Any]) -> list[dict[str, Any]]:
        kept, ids = [], set()
        for index, entry in enumerate(entries):
            if not (isinstance(entry, dict) and _id(entry.get("id")) and isinstance(entry.get("name"), str)):
                self.note(f"category {index} of the categories list needs a whole-number id and a name")
            elif entry["id"] in ids:
                self.note(f"category id {entry['id']} appears twice in the categories list; the second is left out")
            else:
                ids.add(entry["id"])
                kept.append(entry)
        return kept

    def _annotations(self, entries: list[Any]) -> list[dict[str, Any]]:
        """The annotations pycocotools can index (whole-number ids); each other one spoils its image."""
        kept = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                self.note(f"annotation {index} of the annotations list is not an object")
            elif not (_id(entry.get("id")) and _id(entry.get("image_id")) and _id(entry.get("category_id"))):
                if _id(entry.get("image_id")):
                    self.bad_images.add(entry["image_id"])
                self.note(f"annotation {entry.get('id', index)} needs whole-number id, image_id and category_id")
            elif entry["image_id"] not in self.image_ids:
                self.note(f"annotation {entry['id']}: image id {entry['image_id']} is not in the images list")
            else:
                kept.append(entry)
        return kept

    def _image(self, coco: COCO, image: dict[str, Any]) -> Annotated | None:
        name, matches = self._find(image["file_name"])
        if name is None:
            self.note(f"image {image['id']} ({image['file_name']}): " + (
                f"{matches} files in the source end with this name; none is used" if matches
                else "image missing: it is not in the source"))
            return None
        width, height = image.get("width"), image.get("height")
        size = (width, height) if _number(width) and _number(height) and width > 0 and height > 0 else None
        annotated = Annotated(name, label_file=self.label, split=self.split or split_of(name))
        bad = False
        for annotation in coco.imgToAnns.get(image["id"], []):
            box, reason = self._box(coco, annotation, size)
            if reason:
                self.note(f"annotation {annotation['id']}: {reason}")
                bad = True
            elif box is not None:
                annotated.boxes.append(box)
        return None if bad else annotated

    def _box(self, coco: COCO, annotation: dict[str, Any], size: tuple[float, float] | None) -> tuple[Box | None, str]:
        bbox = annotation.get("bbox")
        if not (isinstance(bbox, list) and len(bbox) == 4 and all(_number(v) for v in bbox)):
            return None, f"bbox {json.dumps(bbox)[:60]} is not [x, y, width, height] numbers"
        category = coco.cats.get(annotation["category_id"])
        if category is None:
            return None, f"category id {annotation['category_id']} is not in the categories"
        x, y, width, height = bbox
        for name, value in (("width", width), ("height", height)):
            if value <= 0:
                return None, f"{name} ({value:g}) is not positive"
        reason = placement_problem(x, y, x + width, y + height, size)
        if reason:
            return None, reason
        label = self.classes.name(category["name"], self.label)
        difficult = annotation.get("iscrowd") in (1, True)
        return (None if label is None else Box(x, y, x + width, y + height, label, difficult, annotation["id"])), ""

    def _find(self, file_name: str) -> tuple[str | None, int]:
        """The source's name for an image's file_name (see the module's docstring), or None and how
        many names it could be."""
        wanted = file_name.replace("\\", "/").removeprefix("./")
        for name in (PurePosixPath(PurePosixPath(self.label).parent, wanted).as_posix(), wanted):
            if name in self.known:
                return name, 1
        ends = [n for n in self.by_name.get(PurePosixPath(wanted).name, []) if n.endswith("/" + wanted)]
        if len(ends) > 1:
            tag = PurePosixPath(self.label).stem.rsplit("_", 1)[-1]
            tied = [n for n in ends if tag in n.split("/")[:-1]]
            ends = tied if len(tied) == 1 else ends
        return (ends[0] if len(ends) == 1 else None), len(ends)
