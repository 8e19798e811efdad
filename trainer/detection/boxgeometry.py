"""Moving boxes exactly as ``trainer.imageio.place`` moves the pixels under them.

Boxes are rows ``x1, y1, x2, y2`` in continuous pixel coordinates of the
image (see ``annotations``): a point x lands at ``x * scale + shift`` per axis
of the ``Placement``, where the scale is the rounded scaled size over the
padded size, as the pixels were scaled, not the nominal scale of the mode.
"""

from __future__ import annotations

import math

import numpy as np

from trainer.imageio import Placement


def _rows(boxes: np.ndarray) -> np.ndarray:
    boxes = np.asarray(boxes, dtype=np.float64)
    if boxes.size == 0:
        return boxes.reshape(0, 4)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"boxes must be N×4 (x1, y1, x2, y2), not {boxes.shape}")
    return boxes


def move_boxes(boxes: np.ndarray, where: Placement, min_size: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Move N×4 boxes of an image of size ``where.image`` into the image ``where`` makes.

    Each box is clipped to its image first (nothing of an object lies in the
    padding or the noise), moved, then clipped to the result. Returns the
    moved boxes (N×4 float64, one row per given box, dropped ones included)
    and ``kept`` (N bools): False for a box that is empty after clipping, or
    whose clipped width or height is below ``min_size`` pixels of the result.
    """
    if min_size < 0:
        raise ValueError("min_size cannot be negative")
    boxes = _rows(boxes)
    image_w, image_h = where.image
    inside = np.clip(boxes, 0.0, [image_w, image_h, image_w, image_h])
    (scale_x, scale_y), (shift_x, shift_y) = where.scale, where.shift
    moved = inside * [scale_x, scale_y, scale_x, scale_y] + [shift_x, shift_y, shift_x, shift_y]
    width, height = where.size
    moved = np.clip(moved, 0.0, [width, height, width, height])
    box_w, box_h = moved[:, 2] - moved[:, 0], moved[:, 3] - moved[:, 1]
    kept = (box_w > 0) & (box_h > 0) & (box_w >= min_size) & (box_h >= min_size)
    return moved, kept


def unmove_boxes(boxes: np.ndarray, where: Placement) -> np.ndarray:
    """The inverse of ``move_boxes``: N×4 boxes of the image ``where`` makes
    (a detector's output on it) in pixels of the image it was made of,
    ``where.image``: x goes back to ``(x - shift) / scale`` per axis, then is
    clipped to the image, since what lies outside it (padding, noise) is none
    of the image's. A box wholly outside it comes back empty."""
    boxes = _rows(boxes)
    (scale_x, scale_y), (shift_x, shift_y) = where.scale, where.shift
    back = (boxes - [shift_x, shift_y, shift_x, shift_y]) / [scale_x, scale_y, scale_x, scale_y]
    image_w, image_h = where.image
    return np.clip(back, 0.0, [image_w, image_h, image_w, image_h])


def decode_factors(shown: tuple[int, int], decoded: tuple[int, int]) -> np.ndarray:
    """Per axis, how much smaller the decoded image is than the shown one: a
    JPEG draft decode scales by 1/2, 1/4 or 1/8, rounding sizes up, so pixel
    i covers the source's pixels from i·s to (i+1)·s (the last one cut)."""
    factors = []
    for have, got in zip(shown, decoded, strict=True):
        scale = next((s for s in (1, 2, 4, 8) if math.ceil(have / s) == got), have / got)
        factors.append(scale)
    return np.array(factors, dtype=np.float64)


def fractions_to_pixels(boxes: np.ndarray, image_width: int, image_height: int) -> np.ndarray:
    """N×4 boxes given as fractions of the image's width and height (YOLO, once its
    centre and size are turned into corners) in pixels of that image."""
    return _rows(boxes) * [image_width, image_height, image_width, image_height]
