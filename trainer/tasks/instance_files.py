"""New labelled images for an instance segmentation model's evaluation: a
server folder or an uploaded archive in a layout its dataset import reads
(``instance_plan``: COCO JSON, or Pascal VOC's object and class images),
each image placed as the model's dataset build placed its images and its
objects with it (``Instances.placed``), so the model is scored in the
geometry it learnt; each image that cannot be used reported with its file
and reason and left out (``trainer.inference.labelled_sources`` stores the
rest).

A COCO source's categories are matched to the model's classes by name
(ignoring case); an image with an object of a category the model does not
know is left out with the reason. A VOC source's objects are VOC's 20
classes, so it is taken for a model whose classes are VOC's (one trained on
a VOC dataset) and refused with the reason for any other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Problem
from trainer.inference.errors import InferenceError
from trainer.inference.labelled_sources import Labelled, open_files, stored
from trainer.inference.model import Loaded, build_options
from trainer.inference.preprocess import Placed
from trainer.instances.targets import Instances
from trainer.segmentation.labels import VOC_CLASSES
from trainer.segmentation.shapes import CocoShapes, PlannedShapes, read_shapes

from .instance_plan import chosen_layout, voc_objects
from .training import FileImages


def file_images(loaded: Loaded, source: dict[str, Any], config: dict[str, Any], work: Path) -> FileImages:
    """The source's usable images stored in ``work`` (see the module);
    InferenceError when the source cannot be read, or none of its images can
    be used (with the first reasons)."""
    placing = build_options(Path(loaded.dataset_dir))
    try:
        files, reader = open_files(source, config, work)
        layout = chosen_layout(files, "auto")
        print(f"layout: {layout}", flush=True)
        placing = {**placing, "archive": reader}
        if layout == "coco":
            labelled, problems = _coco_images(read_shapes(files), loaded.classes, placing)
        else:
            if list(loaded.classes) != list(VOC_CLASSES[1:]):
                raise InferenceError("Pascal VOC's object images give VOC's 20 classes, and this model's classes "
                                     "are others: give the images with a COCO JSON file naming its classes.")
            _, found, problems = voc_objects(files)
            labelled = [(image, _placed(target, placing)) for image, target, _ in found]
    except SourceError as exc:
        raise InferenceError(str(exc)) from None
    return stored(loaded, files, reader, labelled, Instances(), problems, source, work)


def _coco_images(found: CocoShapes, classes: list[str], placing: dict[str, Any]) -> tuple[list[Labelled], list[Problem]]:
    """A COCO source's images, each object's category the model's class of
    its name (stored as the class plus one)."""
    known = {name.lower(): index + 1 for index, name in enumerate(classes)}
    labelled, problems = [], list(found.problems)
    for image, planned, _ in found.images:
        unknown = sorted({found.classes[shape.category] for shape in planned.shapes
                          if found.classes[shape.category].lower() not in known})
        if unknown:
            problems.append(Problem(image, None, f"category {', '.join(unknown)} is not one of the model's classes; "
                                                 f"the image is left out"))
            continue
        mine = PlannedShapes(planned.label_file, tuple(
            replace(shape, category=known[found.classes[shape.category].lower()]) for shape in planned.shapes))
        labelled.append((image, _placed(mine, placing)))
    return labelled, problems


def _placed(planned: Any, placing: dict[str, Any]) -> Callable[[Placed], object]:
    return lambda image: Instances().placed(planned, image.shown, image.where.image, placing)[0]
