"""Segment one image with an unpacked model archive:
python segment.py IMAGE [MASK_PNG]

Run in the archive's folder, beside its ``prepare.py``; needs only numpy,
Pillow and onnxruntime. The image is prepared as digitslike's dataset build
prepared the images the model learnt from (``prepare.py``: turned upright,
converted to the model's channels, padded, resized in the dataset's mode,
the mean subtracted), centre-cropped to the network's input as the run was,
and segmented; each pixel of the photo then takes the class of the prepared
pixel its centre lands on (``to_photo``), so the mask is the photo's own
size, as the app's Segment one gives it: ``IGNORE`` (255) where the resize or
the crop hid the pixel from the network. Prints each class found with its
pixels, most first, and writes the mask (a grayscale PNG of class indices)
to MASK_PNG when given.
"""

import json
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image
from prepare import normalised, placed

IGNORE = 255


def window(info):
    """The rows and columns of the prepared image the network takes (its centre crop)."""
    top, left = (info["image_height"] - info["height"]) // 2, (info["image_width"] - info["width"]) // 2
    return slice(top, top + info["height"]), slice(left, left + info["width"])


def prepare(path, info):
    """The network's input, 1×C×h×w float32, and the photo's ``placement``."""
    pixels, where = placed(path, info)
    rows, cols = window(info)
    return normalised(pixels)[:, rows, cols][None], where


def to_photo(classes, where, info):
    """The network's classes (h×w) as the photo's mask: each photo pixel
    takes the prepared pixel its centre lands on (x × scale + shift per
    axis), ``IGNORE`` where that is outside what the network saw."""
    stored = np.full((info["image_height"], info["image_width"]), IGNORE, dtype=np.uint8)
    stored[window(info)] = classes
    (width, height), (scale_x, scale_y), (shift_x, shift_y) = where["photo"], where["scale"], where["shift"]
    cols = np.floor((np.arange(width) + 0.5) * scale_x + shift_x).astype(np.int64)
    rows = np.floor((np.arange(height) + 0.5) * scale_y + shift_y).astype(np.int64)
    inside = ((rows >= 0) & (rows < stored.shape[0]))[:, None] & ((cols >= 0) & (cols < stored.shape[1]))[None, :]
    mask = stored[rows.clip(0, stored.shape[0] - 1)][:, cols.clip(0, stored.shape[1] - 1)]
    return np.where(inside, mask, IGNORE).astype(np.uint8)


def segment(path, info, session):
    """The photo's mask, H×W uint8 class indices (``IGNORE`` where the network saw no pixel)."""
    image, where = prepare(path, info)
    logits = session.run(None, {info["input"]: image})[0][0]
    return to_photo(logits.argmax(axis=0).astype(np.uint8), where, info)


def main(path, mask_path=None):
    with open("info.json", encoding="utf-8") as handle:
        info = json.load(handle)
    with open("labels.txt", encoding="utf-8") as handle:
        labels = handle.read().splitlines()
    mask = segment(path, info, ort.InferenceSession("model.onnx"))
    if mask_path:
        Image.fromarray(mask, "L").save(mask_path)
    counts = np.bincount(mask.ravel(), minlength=256)
    for index in sorted(np.flatnonzero(counts[:len(labels)]), key=lambda c: -counts[c]):
        print(f"{labels[index]}\t{counts[index]}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
