"""Semantic segmentation's dataset planner (``Task.plan``): images and their
label images from a server folder or an uploaded archive, in the folders
layout or Pascal VOC's (``trainer.segmentation.pairs``), or images with a
COCO JSON file whose annotations' polygons and RLEs draw the masks
(``trainer.segmentation.shapes``: the classes are the background and the
categories, crowd regions ignored; none of the label options below apply).

How label images give classes is chosen once for the source
(``labels.Coding``), from the form and, where it says "auto", from the first
label images (``PEEK_LABELS``):

- label images in colour need a colour map (a line a class);
- otherwise their values are the classes: palette indices or gray levels,
  with the ignore value (255 unless chosen) excluded from loss and metrics;
- label images holding only 0 and 255 are binary masks: 255 is the
  foreground (class 1) unless the user says it is the ignore value. The
  guess is written in the manifest's ``labelling`` and shown.

The classes are named by the form's class names, else a class file at the
source's top (``pairs.CLASS_FILES``), else the colour map's names, VOC's 21
for its layout, "background" and "foreground" for binary masks; else they
are numbered from the values found (``Plan.unnamed_classes``). Each pair
whose label image cannot be read as those classes is skipped in the
build's pool with the file and reason (``targets.Masks.placed``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from trainer import diskspace
from trainer.archives import ArchiveError, MemberReader
from trainer.buildplan import BuildError, Item, Plan, split_by_percentages
from trainer.dataset_sources import SourceError
from trainer.detection.sourcefiles import SourceFiles, open_source
from trainer.imageio import ImageError, load_label_image
from trainer.segmentation.labels import (
    IGNORE,
    IGNORE_NAMES,
    MAX_CLASSES,
    VOC_CLASSES,
    Coding,
    ColourLine,
    holds_colours,
    parse_class_names,
    parse_colour_map,
    values,
    voc_colours,
)
from trainer.segmentation.pairs import Paired, chosen_layout, class_file, read_pairs
from trainer.segmentation.shapes import CocoShapes, read_shapes
from trainer.segmentation.targets import PlannedMask

PEEK_LABELS = 16  # label images read to choose how the source's labels give classes
FIRST_REASONS = 5
LABEL_TYPES = ("auto", "values", "colours")
BINARY_CHOICES = ("auto", "foreground", "ignore")
SHOWN_COLOURS = 8  # colours named when a colour map is missing


def plan(config: dict[str, Any], partial: Path, roots: list[Path]) -> tuple[Plan, MemberReader | None]:
    try:
        files, reader = open_source(config, partial, "segmentation")
        if chosen_layout(files, config.get("layout") or "auto") == "coco":
            return coco_plan(files, read_shapes(files), config), reader
        paired = read_pairs(files, config.get("layout") or "auto", config.get("image_folder") or "",
                            config.get("label_folder") or "")
        skipped = [{"path": p.file, "class": "", "split": "", "reason": p.reason} for p in paired.problems]
        if not paired.pairs:
            reasons = "; ".join(str(p) for p in paired.problems[:FIRST_REASONS]) or "it holds no image with a label image"
            raise BuildError(f"No image with its label image in the source: {reasons}.")
        coding, classes, labelling = choose_coding(config, files, paired)
    except (ArchiveError, SourceError, ValueError) as exc:
        if diskspace.is_full(exc):
            raise
        raise BuildError(str(exc)) from None
    items = []
    for pair in paired.pairs:
        image, label = files.path_or_member(pair.image), files.path_or_member(pair.label)
        target = PlannedMask(label, pair.label, coding)
        items.append(Item(image, target, "train") if isinstance(image, str) else
                     Item(image.name, target, "train", member=image))
    split_by_percentages(items, [pair.split for pair in paired.pairs], config)
    return Plan(classes or [], items, skipped, [], labelling=labelling, unnamed_classes=classes is None), reader


def coco_plan(files: SourceFiles, found: CocoShapes, config: dict[str, Any]) -> Plan:
    """A COCO source's plan: each image with its shapes, in the split the source gives it or split by the form's
    percentages; BuildError when none of its images can be used."""
    if not found.images:
        reasons = "; ".join(str(p) for p in found.problems[:FIRST_REASONS]) or "its JSON lists no image"
        raise BuildError(f"No usable image in the COCO source: {reasons}.")
    items = []
    for image, shapes, _ in found.images:
        where = files.path_or_member(image)
        items.append(Item(where, shapes, "train") if isinstance(where, str) else
                     Item(where.name, shapes, "train", member=where))
    split_by_percentages(items, [split for _, _, split in found.images], config)
    skipped = [{"path": p.file, "class": "", "split": "", "reason": p.reason} for p in found.problems]
    labelling = {"layout": "coco", "label_type": "shapes", "ignore": "crowd regions",
                 "colours": [list(colour) for colour in voc_colours(IGNORE)]}
    return Plan(found.classes, items, skipped, [], labelling=labelling)


def choose_coding(config: dict[str, Any], files: SourceFiles,
                  paired: Paired) -> tuple[Coding, list[str] | None, dict[str, Any]]:
    """How the source's label images give classes, the class names (None:
    numbered from the values found) and the manifest's ``labelling``.
    ValueError (shown as the build's failure) for a choice the labels cannot take."""
    label_type = config.get("label_type") or "auto"
    binary = config.get("binary") or "auto"
    if label_type not in LABEL_TYPES or binary not in BINARY_CHOICES:
        raise ValueError(f"The label type is one of {', '.join(LABEL_TYPES)} and the binary choice one of "
                         f"{', '.join(BINARY_CHOICES)}.")
    colour_lines = parse_colour_map(config.get("colour_map") or "")
    names = _given_names(config, files)
    peeked = _peek(files, paired)
    in_colour = [image for image in peeked if holds_colours(image)]
    labelling: dict[str, Any] = {"layout": paired.layout}
    if label_type == "colours" or (label_type == "auto" and in_colour):
        if not colour_lines:
            raise ValueError(_colour_map_wanted(in_colour[0] if in_colour else peeked[0]))
        coding = Coding.of_colours(colour_lines)
        kept = [line for line in colour_lines if line.name.lower() not in IGNORE_NAMES]
        classes = names or [line.name or f"class {index}" for index, line in enumerate(kept)]
        _check_count(classes, coding.classes, "colour map lines")
        labelling.update(label_type="colours", colours=[list(line.colour) for line in kept],
                         ignore=coding.ignore_value)
        return coding, classes, labelling
    found = set().union(*(np.unique(values(image)).tolist() for image in peeked)) if peeked else set()
    ignore = config.get("ignore_value")
    binary_masks = bool(found) and found <= {0, 255} and 255 in found
    foreground = binary == "foreground" or (binary == "auto" and binary_masks)
    if foreground:
        classes: list[str] | None = names or ["background", "foreground"]
        labelling["guess"] = ("The label images hold only the values 0 and 255: read as background (0) and "
                              "foreground (255)." if binary == "auto" else "")
    elif paired.layout == "voc" and not names:
        classes = list(VOC_CLASSES)
    else:
        classes = names
    if binary == "ignore" and binary_masks:
        ignore = 255
    if classes is not None and len(classes) > MAX_CLASSES:
        raise ValueError(f"{len(classes)} classes are named; a dataset holds at most {MAX_CLASSES}.")
    if ignore is not None and not foreground and classes is not None and ignore < len(classes):
        raise ValueError(f"The ignore value {ignore} is also class {ignore} (“{classes[ignore]}”): choose another "
                         f"ignore value, or name fewer classes.")
    coding = Coding.of_values(len(classes) if classes is not None else None, ignore, foreground)
    labelling.update(label_type="values", binary="foreground" if foreground else "", ignore=coding.ignore_value,
                     colours=_display_colours(colour_lines, peeked))
    return coding, classes, labelling


def dataset_coding(options: dict[str, Any], labelling: dict[str, Any], classes: int) -> Coding:
    """How a built dataset's label images gave its ``classes`` classes, from
    its manifest's build ``options`` and ``labelling`` (``choose_coding``'s):
    new label images are read as its own were (an evaluation's)."""
    if labelling.get("label_type") == "colours":
        return Coding.of_colours(parse_colour_map(options.get("colour_map") or ""))
    if labelling.get("label_type") == "shapes":  # drawn from COCO: label images of it are values, 255 ignored
        return Coding.of_values(classes, IGNORE)
    ignore = str(labelling.get("ignore") or "")
    return Coding.of_values(classes, int(ignore) if ignore.isdigit() else None, labelling.get("binary") == "foreground")


def _given_names(config: dict[str, Any], files: SourceFiles) -> list[str] | None:
    if text := (config.get("class_names") or "").strip():
        return parse_class_names(text)
    if (name := class_file(files)) is not None:
        try:
            return parse_class_names(files.read(name).decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{name}: {exc}") from None
    return None


def _peek(files: SourceFiles, paired: Paired) -> list:
    """The first label images that can be read (the others are reported by the build's pool)."""
    peeked = []
    for pair in paired.pairs:
        if len(peeked) == PEEK_LABELS:
            break
        try:
            peeked.append(load_label_image(files.read(pair.label)))
        except (ImageError, SourceError):
            continue
    if not peeked:
        raise ValueError(f"None of the first label images could be read as an image (the first: {paired.pairs[0].label}).")
    return peeked


def _colour_map_wanted(image) -> str:
    pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    colours = np.unique(pixels, axis=0)
    shown = ", ".join(" ".join(map(str, colour)) for colour in colours[:SHOWN_COLOURS].tolist())
    more = f" and {len(colours) - SHOWN_COLOURS} more" if len(colours) > SHOWN_COLOURS else ""
    return (f"The label images are in colour ({shown}{more} in the first): give a colour map, a line a class "
            f"“red green blue name”, or choose values if the colours are gray levels.")


def _check_count(classes: list[str], expected: int, what: str) -> None:
    if len(classes) != expected:
        raise ValueError(f"{len(classes)} class names are given for {expected} {what}: give one name a class.")


def _display_colours(colour_lines: list[ColourLine], peeked: list) -> list[list[int]]:
    """The colour the pages draw each class in: the colour map's, the first
    palette label image's palette, or VOC's."""
    if colour_lines:
        return [list(line.colour) for line in colour_lines if line.name.lower() not in IGNORE_NAMES]
    palette_image = next((image for image in peeked if image.mode == "P"), None)
    if palette_image is not None:
        palette = palette_image.getpalette() or []
        colours = [palette[i:i + 3] for i in range(0, min(len(palette), 3 * IGNORE), 3)]
        if len({tuple(c) for c in colours}) > 1:
            return colours
    return [list(colour) for colour in voc_colours(IGNORE)]
