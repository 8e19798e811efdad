"""Segment one: a segmenter's class for every pixel of one image, in the
image's own pixels.

The image is prepared as the dataset build and the training loop prepared
theirs (``preprocess.placed``: decoded whole, as the build decodes a
segmentation dataset's images, padded and resized in the build's mode to the
dataset's size; then the job's mean and centre crop by the ``Normalizer``),
the network runs in eval mode, and each pixel of the image takes the class
of the stored pixel its centre lands on through the same placement
(``back_to_image``), so the mask lies over the file the user gave, whatever
its size and the resize mode. A pixel that lands on no pixel the network
saw (cropped away by the resize or the run's crop) is ``IGNORE``.

The answer carries the mask as a grayscale PNG of class indices (a photo's
mask as numbers would be megabytes of JSON) and the pixels of each class."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import torch

from trainer.augment import centre_crop
from trainer.datastore import png_bytes
from trainer.imageio import Placement
from trainer.segmentation.labels import IGNORE
from trainer.tasks.uses import SEGMENT, not_offered

from .errors import InferenceError
from .model import Loaded
from .preprocess import Source, normalize, placed


def back_to_image(stored: np.ndarray, where: Placement) -> np.ndarray:
    """A mask on the stored image (h×w uint8) as the mask of the image
    ``where`` placed (its height × width): each image pixel takes the stored
    pixel its centre lands on (``x * scale + shift`` per axis), ``IGNORE``
    where that is outside the stored image."""
    width, height = where.image
    (scale_x, scale_y), (shift_x, shift_y) = where.scale, where.shift
    cols = np.floor((np.arange(width) + 0.5) * scale_x + shift_x).astype(np.int64)
    rows = np.floor((np.arange(height) + 0.5) * scale_y + shift_y).astype(np.int64)
    inside_cols = (cols >= 0) & (cols < stored.shape[1])
    inside_rows = (rows >= 0) & (rows < stored.shape[0])
    mask = stored[rows.clip(0, stored.shape[0] - 1)][:, cols.clip(0, stored.shape[1] - 1)]
    return np.where(inside_rows[:, None] & inside_cols[None, :], mask, IGNORE).astype(np.uint8)


@torch.inference_mode()
def classes_of_pixels(loaded: Loaded, pixels: np.ndarray) -> np.ndarray:
    """The class of each pixel of a stored-size image (H×W×C uint8): the
    network's on the run's centre crop, ``IGNORE`` outside it (H×W uint8)."""
    logits = loaded.model(normalize(loaded, pixels[None]))
    found = logits[0].argmax(dim=0).to(torch.uint8).cpu().numpy()
    height, width = pixels.shape[:2]
    window = centre_crop(height, width, loaded.normalizer.crop, "cpu")
    if window is None:
        return found
    stored = np.full((height, width), IGNORE, dtype=np.uint8)
    rows, cols = (axis[0].numpy() for axis in window)
    stored[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1] = found
    return stored


def segment(loaded: Loaded, source: Source) -> dict[str, Any]:
    """The classes ``loaded`` gives the pixels of ``source`` (a path or the
    file's bytes): the image's ``width`` and ``height``, its ``mask`` (a
    base64 grayscale PNG of class indices, 255 where the network saw no
    pixel) and ``classes``, each with its ``index``, ``class`` (name) and
    ``pixels``, most first. A model of a task that does not segment, or an
    image that cannot be used, raises ``InferenceError``."""
    if not loaded.task.offers(SEGMENT):
        raise InferenceError(not_offered(SEGMENT, loaded.task.label))
    image = placed(loaded, source)
    mask = back_to_image(classes_of_pixels(loaded, image.pixels), image.where)
    counts = np.bincount(mask.ravel(), minlength=256)
    found = [{"index": int(c), "class": loaded.classes[c], "pixels": int(counts[c])}
             for c in np.flatnonzero(counts[:len(loaded.classes)])]
    width, height = image.shown
    return {"width": width, "height": height, "mask": base64.b64encode(png_bytes(mask[:, :, None])).decode("ascii"),
            "classes": sorted(found, key=lambda row: row["pixels"], reverse=True)}
