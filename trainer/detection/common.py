"""What the format readers share: their options, the class list, pairing
images with label files by name, and the box checks whose reasons users read.

Every reason is a plain sentence about the file as the user wrote it; the
readers add the file and the line.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from ..dataset_sources import SourceError
from ..imageio import is_image
from .annotations import Annotated, Box, Found, Problem
from .sourcefiles import MAX_LABEL_BYTES, SourceFiles, TooLarge

SPLIT_NAMES = {"train": "train", "val": "val", "valid": "val", "validation": "val", "test": "test"}

Folder = tuple[str, ...]  # a folder as its path's parts; () for "the same folder"


@dataclass(frozen=True)
class ImportOptions:
    # Names in the source -> class names, matched ignoring case; several names may share a class
    # (Car and Van as "car"). Boxes of names not in it are left out and counted. None keeps the
    # source's own names.
    class_map: dict[str, str] | None = None
    # KITTI, VOC and YOLO: the folders of images and of label files, relative to the source, when
    # the format's usual names (image_2 + label_2, JPEGImages + Annotations, images + labels) do not fit;
    # one left out is the top folder.
    image_folder: str | None = None
    label_folder: str | None = None
    max_label_bytes: int = MAX_LABEL_BYTES

    def folders(self, usual: list[tuple[Folder, Folder]]) -> list[tuple[Folder, Folder]]:
        """The (images, labels) folder pairs to try: the ones given, or the format's usual ones."""
        if self.image_folder is None and self.label_folder is None:
            return usual
        return [(_parts(self.image_folder), _parts(self.label_folder))]


def _parts(folder: str | None) -> Folder:
    return tuple(part for part in (folder or "").split("/") if part not in ("", "."))


class ClassMap:
    """The class of each box by its name in the source, and the names the map leaves out.

    ``listed`` is the format's own class list in order (YOLO's classes file, COCO's categories);
    without it, the classes are the names met, sorted. A map gives the classes itself, in its
    order, whether met or not."""

    def __init__(self, class_map: dict[str, str] | None, listed: list[str] | None = None) -> None:
        self.map: dict[str, str] | None = None
        if class_map is not None:
            self.map = {}
            for name, target in class_map.items():
                if self.map.setdefault(name.lower(), target) != target:
                    raise SourceError(f"The class list maps '{name}' twice, to '{self.map[name.lower()]}' and "
                                      f"to '{target}' (names are matched ignoring case).")
        self.listed = listed
        self.met: set[str] = set()
        self.dropped: dict[str, list] = {}  # lower-cased name -> [the name as first met, where, boxes]

    def name(self, source: str, where: str) -> str | None:
        """The class of a box named ``source``; None, counted, when the map leaves it out."""
        if self.map is None:
            self.met.add(source)
            return source
        if source.lower() in self.map:
            return self.map[source.lower()]
        self.dropped.setdefault(source.lower(), [source, where, 0])[2] += 1
        return None

    def classes(self) -> list[str]:
        if self.map is not None:
            return list(dict.fromkeys(self.map.values()))
        if self.listed is not None:
            return list(dict.fromkeys(self.listed))
        return sorted(self.met)

    def problems(self) -> list[Problem]:
        return [Problem(where, None, f"class '{name}' is not in the class list; its {count} "
                                     f"box{'es' if count != 1 else ''} {'are' if count != 1 else 'is'} left out")
                for name, where, count in self.dropped.values()]


def found(images: list[Annotated], classes: ClassMap, problems: list[Problem]) -> Found:
    """The reader's result, problems in file order (each file's in line order)."""
    everything = problems + classes.problems()
    return Found(images, classes.classes(), sorted(everything, key=lambda p: p.file))


def read_text(files: SourceFiles, name: str, options: ImportOptions) -> tuple[str | None, Problem | None]:
    """A label file as text (UTF-8, a byte-order mark allowed), or the problem that stops it being read."""
    try:
        data = files.read(name, options.max_label_bytes)
    except TooLarge as exc:
        return None, Problem(name, None, str(exc))
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        return None, Problem(name, line, f"not valid UTF-8 text (byte 0x{data[exc.start]:02x})")


def number(text: str) -> float | None:
    """A finite number, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def order_problem(low: tuple[str, float], high: tuple[str, float], vertical: bool,
                  inclusive: bool = False) -> str | None:
    """Why two coordinates do not make a box side (``inclusive``: VOC's equal ones make a 1-pixel box)."""
    (low_name, low_value), (high_name, high_value) = low, high
    if high_value < low_value:
        return f"{high_name} ({high_value:g}) is {'above' if vertical else 'left of'} {low_name} ({low_value:g})"
    if high_value == low_value and not inclusive:
        return f"{high_name} ({high_value:g}) equals {low_name} ({low_value:g}): the box has no " \
               f"{'height' if vertical else 'width'}"
    return None


def placement_problem(x1: float, y1: float, x2: float, y2: float, size: tuple[float, float] | None) -> str | None:
    """Why a box in pixels lies outside its image: ending left of or above it, or, when the format
    gives the image's size, starting right of or below it. A box that only overhangs an edge is
    kept as given, for the build to clip against the decoded image."""
    if x2 <= 0 or y2 <= 0:
        return f"the box ends at x2 {x2:g}, y2 {y2:g}, left of or above the image"
    if size is not None and (x1 >= size[0] or y1 >= size[1]):
        return f"the box starts at x1 {x1:g}, y1 {y1:g}, outside the {size[0]:g}×{size[1]:g} image"
    return None


def stem(name: str) -> str:
    return str(PurePosixPath(name).with_suffix(""))


def swap_folder(name: str, old: Folder, new: Folder) -> str | None:
    """``name`` with its last run of folders ``old`` replaced by ``new``; None when it has none.
    With ``old`` empty, ``name`` itself (labels next to their images)."""
    if not old:
        return name
    parts = name.split("/")
    for start in range(len(parts) - 1 - len(old), -1, -1):
        if tuple(parts[start:start + len(old)]) == old:
            return "/".join(parts[:start] + list(new) + parts[start + len(old):])
    return None


def split_of(name: str) -> str | None:
    """The split a folder of the name states (``images/val/1.jpg``, ``valid/images/1.jpg``)."""
    return next((SPLIT_NAMES[part.lower()] for part in name.split("/")[:-1] if part.lower() in SPLIT_NAMES), None)


@dataclass
class Pairs:
    """Label files with the images of the same name (none, one, or, ambiguously, several), and
    the images that have no label file in a folder of label files."""

    labels: list[tuple[str, list[str]]] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)


def pair(names: list[str], images: Folder, labels: Folder, suffix: str, exclude: Collection[str] = ()) -> Pairs:
    """Pairs each ``suffix`` file under the ``labels`` folder (other than ``exclude``) with the
    images under ``images`` whose paths match it but for that folder and the extension."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for name in names:
        swapped = swap_folder(name, images, labels) if is_image(name) else None
        if swapped is not None:
            by_key[stem(swapped)].append(name)
    result, used, label_folders = Pairs(), set(), set()
    for name in names:
        if name.lower().endswith(suffix) and name not in exclude and swap_folder(name, labels, labels) is not None:
            key = stem(name)
            result.labels.append((name, by_key.get(key, [])))
            used.add(key)
            label_folders.add(_label_folder(name, labels))
    result.unlabelled = sorted(image for key, found in by_key.items() if key not in used
                               and _label_folder(key, labels) in label_folders for image in found)
    return result


def _label_folder(name: str, labels: Folder) -> str:
    """The folder of label files a name falls in: its path up to its last run of ``labels``
    (``testing/label_2``), or its own folder. Images whose label folder holds no label file at all
    (KITTI's unlabelled ``testing/image_2``) are not labelled data, and not reported."""
    parts = name.split("/")[:-1]
    for end in range(len(parts), len(labels) - 1, -1):
        if labels and tuple(parts[end - len(labels):end]) == labels:
            return "/".join(parts[:end])
    return "/".join(parts)


def choose_folders(names: list[str], candidates: list[tuple[Folder, Folder]], suffix: str) -> tuple[Folder, Folder] | None:
    """The first (images, labels) pair of folders that holds both images and ``suffix`` files."""
    for images, labels in candidates:
        if any(is_image(n) and swap_folder(n, images, images) is not None for n in names) and \
                any(n.lower().endswith(suffix) and swap_folder(n, labels, labels) is not None for n in names):
            return images, labels
    return None


class BadLine(Exception):
    """A line of a label file that cannot be read; ``str(exc)`` is the reason."""


# What a line gives: a box (into "boxes" or "ignore") or nothing (a class the map leaves out).
LineParser = Callable[[list[str], str], tuple[str, Box] | None]


def read_line_files(files: SourceFiles, pairs: Pairs, folders: tuple[Folder, Folder], options: ImportOptions,
                    parse: LineParser, fractions: bool = False) -> tuple[list[Annotated], list[Problem]]:
    """The images of text label files of one line per box (KITTI, YOLO). ``parse`` gets a line's
    words and its label file's folder, and raises BadLine. An image with any bad line is left out,
    every bad line reported; an image without a label file is reported and left out."""
    images_folder, labels_folder = folders
    images, problems = [], []
    for label, matches in pairs.labels:
        if len(matches) != 1:
            expected = stem(swap_folder(label, labels_folder, images_folder) or label)
            reason = (f"image missing: no image file {expected}.* for it" if not matches else
                      f"several images match it ({', '.join(matches)}); it is left out")
            problems.append(Problem(label, None, reason))
            continue
        text, problem = read_text(files, label, options)
        if problem is not None:
            problems.append(problem)
            continue
        annotated = Annotated(matches[0], fractions=fractions, label_file=label, split=split_of(matches[0]))
        bad = []
        folder = str(PurePosixPath(label).parent)
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                got = parse(line.split(), folder)
            except BadLine as exc:
                bad.append(Problem(label, number, str(exc)))
                continue
            if got is not None:
                kind, box = got
                getattr(annotated, kind).append(replace(box, line=number))
        problems.extend(bad)
        if not bad:
            images.append(annotated)
    for image in pairs.unlabelled:
        expected = stem(swap_folder(image, images_folder, labels_folder) or image) + ".txt"
        problems.append(Problem(image, None, f"label missing: no label file {expected} for it; the image is left out"))
    return images, problems
