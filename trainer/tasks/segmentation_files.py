"""New labelled images for a segmenter's evaluation: images and their label
images in a server folder or an uploaded archive, in a layout its dataset
import reads (``trainer.segmentation.pairs``: folders of images and of
label images with matching names, or Pascal VOC's), paired by the same
reader, which reports each image without its label image and each label
image without its image.

The label images are read as the model's dataset read its own (the coding
its manifest records: palette indices or gray levels with their ignore
value, 0/255 masks as foreground, or colours with the dataset's colour
map), so a value or colour that is none of the model's classes is reported
with its file and place and the pair left out. Each image is placed as the
dataset build placed its images and its mask with it by nearest neighbour
(``Masks.placed``), so the segmenter is scored in the geometry it learnt;
a label image whose size is not its image's is reported and left out too
(``trainer.inference.labelled_sources`` stores the rest).

Images with a COCO JSON file instead (``trainer.segmentation.shapes``) have
their masks drawn from its polygons and RLEs, its categories matched to the
model's classes by name; an image with a shape of a category the model does
not know is reported and left out."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainer import jobfiles
from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Problem
from trainer.inference.errors import InferenceError
from trainer.inference.labelled_sources import Labelled, open_files, stored
from trainer.inference.model import Loaded
from trainer.inference.preprocess import Placed
from trainer.segmentation.labels import IGNORE
from trainer.segmentation.pairs import Pair, chosen_layout, read_pairs
from trainer.segmentation.shapes import CocoShapes, PlannedShapes, read_shapes
from trainer.segmentation.targets import Masks, PlannedMask

from .segmentation_plan import dataset_coding
from .training import FileImages


def file_images(loaded: Loaded, source: dict[str, Any], config: dict[str, Any], work: Path) -> FileImages:
    """The source's usable pairs stored in ``work`` (see the module);
    InferenceError when the source cannot be read, or none of its pairs can
    be used (with the first reasons)."""
    manifest = json.loads((Path(loaded.dataset_dir) / jobfiles.MANIFEST).read_text(encoding="utf-8"))
    options = manifest.get("options") or {}
    coding = dataset_coding(options, manifest.get("labelling") or {}, len(loaded.classes))
    try:
        files, reader = open_files(source, config, work)
        if chosen_layout(files, "auto") == "coco":
            labelled, problems = _coco_images(read_shapes(files), loaded.classes, {**options, "archive": reader})
            return stored(loaded, files, reader, labelled, Masks(), problems, source, work)
        paired = read_pairs(files, "auto")
    except SourceError as exc:
        raise InferenceError(str(exc)) from None
    print(f"layout: {paired.layout}; {len(paired.pairs)} image(s) with a label image", flush=True)
    placing = {**options, "archive": reader}

    def mask_of(pair: Pair) -> Callable[[Placed], object]:
        planned = PlannedMask(files.path_or_member(pair.label), pair.label, coding)
        return lambda image: Masks().placed(planned, image.shown, image.where.image, placing)[0]

    labelled = [(pair.image, mask_of(pair)) for pair in paired.pairs]
    return stored(loaded, files, reader, labelled, Masks(), list(paired.problems), source, work)


def _coco_images(found: CocoShapes, classes: list[str], placing: dict[str, Any]) -> tuple[list[Labelled], list[Problem]]:
    """A COCO source's images, their categories matched to the model's
    classes by name (ignoring case); an image with a shape of a category the
    model does not know is left out, with the reason."""
    known = {name.lower(): index for index, name in enumerate(classes)}
    labelled, problems = [], list(found.problems)
    for image, planned, _ in found.images:
        unknown = sorted({found.classes[shape.index] for shape in planned.shapes
                          if shape.index != IGNORE and found.classes[shape.index].lower() not in known})
        if unknown:
            problems.append(Problem(image, None, f"category {', '.join(unknown)} is not one of the model's classes; "
                                                 f"the image is left out"))
            continue
        mine = PlannedShapes(planned.label_file, tuple(
            shape if shape.index == IGNORE else replace(shape, index=known[found.classes[shape.index].lower()])
            for shape in planned.shapes))
        labelled.append((image, _painted(mine, placing)))
    return labelled, problems


def _painted(planned: PlannedShapes, placing: dict[str, Any]) -> Callable[[Placed], object]:
    return lambda image: Masks().placed(planned, image.shown, image.where.image, placing)[0]


