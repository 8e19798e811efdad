"""The detection formats by name, guessing a source's format from its
layout, and reading a source in a named format.

``read_source`` reports, and never fails because of, what individual files
hold: the build decides what to do when no usable image is left. It raises
SourceError only when the source cannot be read in that format at all (no
label folder, no classes file, an unknown format).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..dataset_sources import SourceError
from .annotations import Found, Problem
from .coco import read_coco
from .common import ImportOptions, choose_folders, is_image, stem
from .kitti import read_kitti
from .sourcefiles import SourceFiles, TooLarge
from .voc import read_voc
from .yolo import classes_file, read_yolo

PEEK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Format:
    label: str  # what the user picks from
    read: Callable[[SourceFiles, ImportOptions], Found]


FORMATS = {
    "kitti": Format("KITTI (image_2 and label_2 folders of text files)", read_kitti),
    "voc": Format("Pascal VOC (Annotations/*.xml and JPEGImages)", read_voc),
    "coco": Format("COCO (a JSON file of images, categories and annotations)", read_coco),
    "yolo": Format("YOLO (images and labels folders, and a classes file)", read_yolo),
}


def guess_format(files: SourceFiles) -> str | None:
    """The format the source's layout shows, or None: VOC XML files (in Annotations, or beside images
    of their name), a COCO JSON file, KITTI's image_2 and label_2, a YOLO classes file; for plain
    images and labels folders, the column count of the first label line (15 or 16: KITTI, 5: YOLO)."""
    names = files.names()
    image_stems = {stem(name) for name in names if is_image(name)}
    xmls = [name for name in names if name.lower().endswith(".xml")]
    if any("Annotations" in name.split("/")[:-1] or stem(name) in image_stems for name in xmls):
        return "voc"
    if any(name.lower().endswith(".json") for name in names):
        return "coco"
    if choose_folders(names, [(("image_2",), ("label_2",))], ".txt"):
        return "kitti"
    if classes_file(names) and choose_folders(names, [(("images",), ("labels",))], ".txt"):
        return "yolo"
    if choose_folders(names, [(("images",), ("labels",))], ".txt"):
        return _by_columns(files, [n for n in names if n.endswith(".txt") and "labels" in n.split("/")[:-1]])
    return None


def chosen_format(files: SourceFiles, chosen: str) -> str:
    """The format named (a key of FORMATS), or for "auto" the one the layout
    shows; SourceError when it shows none."""
    if chosen != "auto":
        return chosen
    guessed = guess_format(files)
    if guessed is None:
        raise SourceError("The label format could not be told from the source's layout; choose it: "
                          + "; ".join(f.label for f in FORMATS.values()) + ".")
    return guessed


def _by_columns(files: SourceFiles, labels: list[str]) -> str | None:
    for name in labels:
        try:
            text = files.read(name, PEEK_BYTES).decode("utf-8", errors="replace")
        except TooLarge:
            continue
        line = next((line for line in text.splitlines() if line.strip()), None)
        if line is not None:
            return {15: "kitti", 16: "kitti", 5: "yolo"}.get(len(line.split()))
    return None


def read_source(files: SourceFiles, format: str, options: ImportOptions) -> Found:
    """The source read in ``format`` (a key of FORMATS), with the checks common to all formats: an
    image labelled twice (by two JSON files, say) keeps its first labels, and the files the
    listing refused (links leaving the folder) are reported. Problems come in file order."""
    if format not in FORMATS:
        raise SourceError(f"Unknown detection format '{format}': expected one of {', '.join(FORMATS)}.")
    found = FORMATS[format].read(files, options)
    problems = found.problems + files.problems
    images, first = [], {}
    for annotated in found.images:
        if annotated.image in first:
            problems.append(Problem(annotated.label_file or annotated.image, None,
                                    f"labels the image {annotated.image} again (first in {first[annotated.image]}); "
                                    f"these labels are left out"))
            continue
        first[annotated.image] = annotated.label_file or annotated.image
        images.append(annotated)
    return Found(images, found.classes, sorted(problems, key=lambda p: p.file))
