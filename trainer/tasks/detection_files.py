"""New labelled images for a detector's evaluation: a server folder or an
uploaded archive in one of the formats its dataset import reads (KITTI,
Pascal VOC, COCO, YOLO; ``trainer.detection.importer``), read by the same
readers, which report every bad file or line. Class names are matched to
the model's by name (ignoring case, as the import's class list matches
them): a box of a class the model does not know is reported and left out.

Each image is decoded and placed as the model's dataset build placed its
images (``inference.preprocess.placed``: the build's resize mode, size and
padding) and its boxes moved with its pixels (``Boxes.placed``, with the
build's options from the dataset's manifest), so the detector is scored in
the geometry it learnt. The images are kept as PNGs in the evaluation's
folder, in a store a split of the dataset would be, which the report page
shows and the job batches exactly as it batches a split."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.dataset_sources import SourceError
from trainer.detection.annotations import Annotated
from trainer.detection.common import ImportOptions
from trainer.detection.importer import chosen_format, read_source
from trainer.detection.targets import Boxes
from trainer.inference.errors import InferenceError
from trainer.inference.labelled_sources import open_files, stored
from trainer.inference.model import Loaded, build_options
from trainer.inference.preprocess import Placed

from .detection_plan import planned_boxes
from .training import FileImages


def file_images(loaded: Loaded, source: dict[str, Any], config: dict[str, Any], work: Path) -> FileImages:
    """The source's usable images stored in ``work`` (see the module);
    InferenceError when the source cannot be read in the format, or none of
    its images can be used (with the first reasons)."""
    try:
        files, reader = open_files(source, config, work)
        label_format = chosen_format(files, source.get("label_format") or "auto")
        print(f"label format: {label_format}", flush=True)
        found = read_source(files, label_format, ImportOptions(class_map={name: name for name in loaded.classes}))
    except SourceError as exc:
        raise InferenceError(str(exc)) from None
    options = build_options(loaded.dataset_dir)

    def boxes_of(annotated: Annotated) -> Callable[[Placed], object]:
        return lambda image: Boxes().placed(planned_boxes(annotated, loaded.classes), image.shown, image.where.image,
                                            options)[0]

    labelled = [(annotated.image, boxes_of(annotated)) for annotated in found.images]
    return stored(loaded, files, reader, labelled, Boxes(), list(found.problems), source, work)
