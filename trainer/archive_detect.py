"""Detect objects in one image with an unpacked model archive:
python detect.py IMAGE [MIN_SCORE]

Run in the archive's folder, beside its ``prepare.py``; needs only numpy,
Pillow and onnxruntime. The image is prepared as digitslike's dataset build
prepared the images the model learnt from (``prepare.py``: turned upright,
converted to RGB, padded, resized in the dataset's mode, the mean
subtracted). The model's boxes are in the prepared image's pixels;
``to_photo`` undoes the resize, so the printed boxes (x1, y1, x2, y2) are in
the photo's pixels. Prints the detections
scoring at least MIN_SCORE (default 0.5), best first: class, score, box.
"""

import json
import sys

import numpy as np
import onnxruntime as ort
from prepare import normalised, placed


def prepare(path, info):
    """The model's input, 3×H×W float32 (pixels / 255 minus mean.npy / 255), and its ``placement``."""
    pixels, where = placed(path, info)
    return normalised(pixels), where


def to_photo(boxes, where):
    """Boxes (N×4, x1 y1 x2 y2) of the prepared image in the photo's pixels, clipped to the photo."""
    (scale_x, scale_y), (shift_x, shift_y), (width, height) = where["scale"], where["shift"], where["photo"]
    boxes = (np.asarray(boxes, np.float64).reshape(-1, 4) - [shift_x, shift_y, shift_x, shift_y]) / [
        scale_x, scale_y, scale_x, scale_y]
    return np.clip(boxes, 0, [width, height, width, height])


def main(path, min_score=0.5):
    with open("info.json", encoding="utf-8") as handle:
        info = json.load(handle)
    with open("labels.txt", encoding="utf-8") as handle:
        labels = handle.read().splitlines()
    image, where = prepare(path, info)
    boxes, scores, classes = ort.InferenceSession("model.onnx").run(None, {info["input"]: image})
    for box, score, label in zip(to_photo(boxes, where), scores, classes, strict=True):
        if score >= min_score:
            print(labels[label], f"{score:.6f}", *(f"{value:.3f}" for value in box), sep="\t")


if __name__ == "__main__":
    main(sys.argv[1], *(float(value) for value in sys.argv[2:3]))
