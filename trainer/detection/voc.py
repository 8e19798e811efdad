"""Pascal VOC XML annotations: ``Annotations/*.xml`` with their images in
``JPEGImages/`` beside it, or XML files next to their images.

Each ``<object>`` gives a ``<name>`` and a ``<bndbox>`` of ``xmin``,
``ymin``, ``xmax``, ``ymax`` in VOC's pixels, which count from 1 and include
both ends: the box is x1 = xmin - 1, y1 = ymin - 1, x2 = xmax, y2 = ymax.
``<difficult>1</difficult>`` becomes ``Box.difficult``. The image is the
``<filename>`` in the images folder, or else the image named as the XML
file. Problems name the object by its place in the file (``object 2``).

A file declaring a DTD or an entity is refused before it is parsed: VOC
needs neither, and entities can expand a small file without limit. Files are
read as UTF-8 whatever their XML declaration says.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import PurePosixPath

from ..dataset_sources import SourceError
from .annotations import Annotated, Box, Found, Problem
from .common import (
    ClassMap,
    ImportOptions,
    choose_folders,
    found,
    number,
    order_problem,
    pair,
    placement_problem,
    read_text,
    split_of,
    stem,
    swap_folder,
)
from .sourcefiles import SourceFiles

USUAL_FOLDERS = [(("JPEGImages",), ("Annotations",)), ((), ())]
DECLARATION = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
CORNERS = ("xmin", "ymin", "xmax", "ymax")


def read_voc(files: SourceFiles, options: ImportOptions) -> Found:
    """The source's images with their VOC boxes; SourceError when it holds no images and XML files that pair up."""
    names = files.names()
    folders = choose_folders(names, options.folders(USUAL_FOLDERS), ".xml")
    if folders is None:
        raise SourceError("No Pascal VOC files found: expected Annotations/*.xml with their images in JPEGImages, "
                          "XML files next to their images, or the folders named in the options.")
    images_folder, labels_folder = folders
    known = set(names)
    classes = ClassMap(options.class_map)
    images, problems, used = [], [], set()
    pairs = pair(names, images_folder, labels_folder, ".xml")
    for label, matches in pairs.labels:
        text, problem = read_text(files, label, options)
        if problem is not None:
            problems.append(problem)
            continue
        root, reason = _parse(text)
        if root is None:
            problems.append(Problem(label, reason[0], reason[1]))
            continue
        folder = str(PurePosixPath(swap_folder(label, labels_folder, images_folder) or label).parent)
        filename = (root.findtext("filename") or "").strip()
        image = _image(filename, folder, matches, known)
        if image is None:
            where = f"the folder {folder}" if folder != "." else "the top folder"
            problems.append(Problem(label, None, f"image missing: neither its <filename> ({filename or 'none'}) nor "
                                                 f"an image of the same name is in {where}"))
            continue
        used.add(image)
        annotated, bad = _objects(root, image, label, classes)
        problems.extend(Problem(label, None, reason) for reason in bad)
        if not bad:
            images.append(annotated)
    problems.extend(Problem(image, None, f"label missing: no annotation file "
                                         f"{stem(swap_folder(image, images_folder, labels_folder) or image)}.xml for it; "
                                         f"the image is left out")
                    for image in pairs.unlabelled if image not in used)
    return found(images, classes, problems)


def _parse(text: str) -> tuple[ET.Element | None, tuple[int | None, str]]:
    """The XML's root, or the line and reason it cannot be read."""
    if DECLARATION.search(text):
        return None, (None, "declares a DTD or an entity (<!DOCTYPE or <!ENTITY), which is refused: VOC "
                            "annotations need none, and entities can expand without limit")
    try:
        root = ET.fromstring(text)  # a str is parsed as UTF-8, whatever encoding the file declares
    except ET.ParseError as exc:
        return None, (exc.position[0], f"not valid XML ({str(exc).split(':')[0]})")
    if root.tag != "annotation":
        return None, (None, f"not a Pascal VOC annotation: its root element is <{root.tag}>, not <annotation>")
    return root, (None, "")


def _image(filename: str, folder: str, matches: list[str], known: set[str]) -> str | None:
    """The image of an annotation: its ``<filename>`` in the images folder, or the one image of its name."""
    if filename:
        named = PurePosixPath(folder, filename).as_posix()
        if named in known:
            return named
    return matches[0] if len(matches) == 1 else None


def _objects(root: ET.Element, image: str, label: str, classes: ClassMap) -> tuple[Annotated, list[str]]:
    """The image's boxes, and the reasons its bad objects cannot be read."""
    annotated = Annotated(image, label_file=label, split=split_of(image))
    size, bad = _size(root.find("size"))
    folder = str(PurePosixPath(label).parent)
    for index, element in enumerate(root.findall("object"), start=1):
        name = (element.findtext("name") or "").strip()
        corners, reason = _corners(element.find("bndbox"))
        if not name:
            reason = "has no <name>"
        elif corners is not None:
            xmin, ymin, xmax, ymax = corners
            reason = (order_problem(("xmin", xmin), ("xmax", xmax), vertical=False, inclusive=True)
                      or order_problem(("ymin", ymin), ("ymax", ymax), vertical=True, inclusive=True)
                      or placement_problem(xmin - 1, ymin - 1, xmax, ymax, size))
        if reason:
            bad.append(f"object {index}{f' ({name})' if name else ''}: {reason}")
            continue
        target = classes.name(name, folder)
        if target is not None:
            difficult = (element.findtext("difficult") or "").strip() == "1"
            annotated.boxes.append(Box(xmin - 1, ymin - 1, xmax, ymax, target, difficult))
    return annotated, bad


def _corners(box: ET.Element | None) -> tuple[tuple[float, float, float, float] | None, str]:
    if box is None:
        return None, "has no <bndbox>"
    values = []
    for tag in CORNERS:
        text = box.findtext(tag)
        if text is None:
            return None, f"its <bndbox> has no <{tag}>"
        value = number(text)
        if value is None:
            return None, f"{tag} '{text.strip()}' is not a number"
        values.append(value)
    return (values[0], values[1], values[2], values[3]), ""


def _size(size: ET.Element | None) -> tuple[tuple[float, float] | None, list[str]]:
    """The image's size if the file gives it (0 or missing: unknown, as some tools write), and why
    it cannot be read."""
    if size is None:
        return None, []
    values = []
    for tag in ("width", "height"):
        text = (size.findtext(tag) or "0").strip()
        value = number(text)
        if value is None:
            return None, [f"<size>: {tag} '{text}' is not a number"]
        values.append(value)
    return ((values[0], values[1]) if min(values) > 0 else None), []
