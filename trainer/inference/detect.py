"""Detect one: a detector's boxes on one image, in the image's own pixels.

The image is prepared as the dataset build and the training loop prepared
theirs (``preprocess.placed``: decoded, padded, resized in the build's mode
to the dataset's size; then the job's mean by the ``Normalizer``), the
detector runs in eval mode, and each box is taken back through the
placement the image went through (``boxgeometry.unmove_boxes``, then the
draft decode's factors), so that it lies where the object is in the file
the user gave, whatever the resize mode and padding.

Every detection scoring at least ``SCORE_FLOOR`` is kept: the page filters
them with its own slider without asking again.

A detector that finds masks too (instance segmentation's Mask R-CNN) gives
each box its object's mask: the answer's ``instances`` is one grayscale PNG
the image's size holding each pixel's object (its box's place in the list
plus one, 0 for none), the better-scored object on top where two overlap,
each pixel taking the model's pixel its centre lands on as Segment one's
masks do (``segment.back_to_image``)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import torch

from trainer.datastore import png_bytes
from trainer.detection.boxgeometry import unmove_boxes
from trainer.instances.targets import MASK_THRESHOLD
from trainer.segmentation.labels import IGNORE
from trainer.tasks.uses import DETECT, not_offered

from .errors import InferenceError
from .model import Loaded
from .preprocess import Placed, Source, normalize, placed
from .segment import back_to_image

SCORE_FLOOR = 0.05


def to_image(boxes: np.ndarray, image: Placed) -> np.ndarray:
    """N×4 boxes on the model's input (x1, y1, x2, y2) in pixels of the image as shown."""
    back = unmove_boxes(boxes, image.where) * np.tile(image.factors, 2)
    width, height = image.shown
    return np.clip(back, 0.0, [width, height, width, height])


@torch.inference_mode()
def detections(loaded: Loaded, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The detector's ``boxes``, ``scores`` and ``labels`` (class + 1) for
    one input ``x`` (C×h×w), and a Mask R-CNN's ``masks`` (N×h×w bool), on the CPU."""
    found = loaded.model([x.to(loaded.device)])[0]
    kept = {name: found[name].float().cpu() if name != "labels" else found[name].cpu()
            for name in ("boxes", "scores", "labels")}
    if "masks" in found:
        kept["masks"] = (found["masks"][:, 0] >= MASK_THRESHOLD).cpu()
    return kept


def answer(loaded: Loaded, found: dict[str, torch.Tensor], image: Placed,
           floor: float = SCORE_FLOOR) -> dict[str, Any]:
    """``found`` (as ``detections`` gives it) as the answer: the image's
    ``width`` and ``height`` and its ``boxes``, best first, each ``index``
    and ``class`` (the class's position and name), ``score`` and ``x1``,
    ``y1``, ``x2``, ``y2`` in the image's pixels; with masks, ``instances``
    (see the module) and each box's ``pixels`` there. Boxes scoring under
    ``floor``, of no class of the model, or wholly off the image (on the
    padding or the noise around it) are left out."""
    kept = (found["scores"] >= floor) & (found["labels"] >= 1) & (found["labels"] <= len(loaded.classes))
    scores, labels = found["scores"][kept].tolist(), (found["labels"][kept] - 1).tolist()
    boxes = to_image(found["boxes"][kept].numpy().reshape(-1, 4), image)
    rows = [({"index": label, "class": loaded.classes[label], "score": score,
              "x1": float(x1), "y1": float(y1), "x2": float(x2), "y2": float(y2)}, position)
            for position, ((x1, y1, x2, y2), score, label) in enumerate(zip(boxes.tolist(), scores, labels,
                                                                            strict=True))
            if x2 > x1 and y2 > y1]
    rows.sort(key=lambda row: row[0]["score"], reverse=True)
    width, height = image.shown
    shown = {"width": width, "height": height, "boxes": [row for row, _ in rows]}
    if "masks" in found:
        shown["instances"] = _instances(found["masks"][kept].numpy(), [position for _, position in rows], shown, image)
    return shown


def _instances(masks: np.ndarray, order: list[int], shown: dict[str, Any], image: Placed) -> str:
    """The ``instances`` PNG of the masks (N×h×w bool, on the model's input)
    of the boxes listed in ``order`` (best first), counting each box's
    ``pixels`` into ``shown``."""
    stored = np.zeros(masks.shape[1:], dtype=np.uint8)
    for number in range(len(order), 0, -1):  # the best painted last, on top
        stored[masks[order[number - 1]]] = number
    objects = back_to_image(stored, image.where)
    objects[objects == IGNORE] = 0  # off the model's input: no object
    counts = np.bincount(objects.ravel(), minlength=len(order) + 1)
    for number, row in enumerate(shown["boxes"], start=1):
        row["pixels"] = int(counts[number])
    return base64.b64encode(png_bytes(objects[:, :, None])).decode("ascii")


def detect(loaded: Loaded, source: Source, floor: float = SCORE_FLOOR) -> dict[str, Any]:
    """The boxes ``loaded`` finds in ``source`` (a path or the file's bytes):
    ``answer``'s. A model of a task that does not detect, or an image that
    cannot be used, raises ``InferenceError``."""
    if not loaded.task.offers(DETECT):
        raise InferenceError(not_offered(DETECT, loaded.task.label))
    image = placed(loaded, source)
    return answer(loaded, detections(loaded, normalize(loaded, image.pixels[None])[0]), image, floor)
