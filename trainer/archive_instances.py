"""Find each object and its mask in one image with an unpacked model archive:
python instances.py IMAGE [MIN_SCORE] [OBJECTS_PNG]

Run in the archive's folder, beside its ``prepare.py`` and ``detect.py``;
needs only numpy, Pillow and onnxruntime. The image is prepared as
digitslike's dataset build prepared the images the model learnt from
(``prepare.py``), the model gives its boxes, scores, labels and masks in the
prepared image's pixels, and they are taken back to the photo's: the boxes
by ``detect.to_photo``, each mask by giving each photo pixel the prepared
pixel its centre lands on (``objects_to_photo``), as the app's Detect one
does. Prints the objects scoring at least MIN_SCORE (default 0.5), best
first: class, score, box, mask pixels; writes the photo's objects to
OBJECTS_PNG when given (a grayscale PNG, each pixel its object's place in
the list plus one, 0 for none, the better-scored on top).
"""

import json
import sys

import numpy as np
import onnxruntime as ort
from detect import prepare, to_photo
from PIL import Image

MASK_THRESHOLD = 0.5  # an object's pixels: those its mask gives at least this probability


def objects_to_photo(masks, where):
    """Masks (N×1×h×w probabilities, best first) of the prepared image as one
    map of the photo's size: each photo pixel the number of the best object
    whose mask holds the prepared pixel its centre lands on, 0 for none."""
    stored = np.zeros(masks.shape[2:], dtype=np.uint8)
    for number in range(len(masks), 0, -1):  # the best painted last, on top
        stored[masks[number - 1, 0] >= MASK_THRESHOLD] = number
    (width, height), (scale_x, scale_y), (shift_x, shift_y) = where["photo"], where["scale"], where["shift"]
    cols = np.floor((np.arange(width) + 0.5) * scale_x + shift_x).astype(np.int64)
    rows = np.floor((np.arange(height) + 0.5) * scale_y + shift_y).astype(np.int64)
    inside = ((rows >= 0) & (rows < stored.shape[0]))[:, None] & ((cols >= 0) & (cols < stored.shape[1]))[None, :]
    found = stored[rows.clip(0, stored.shape[0] - 1)][:, cols.clip(0, stored.shape[1] - 1)]
    return np.where(inside, found, 0).astype(np.uint8)


def find(path, info, session, min_score=0.5):
    """The objects scoring at least ``min_score``, best first, as (label
    index, score, box in the photo's pixels), and the photo's map of them."""
    image, where = prepare(path, info)
    boxes, scores, labels, masks = session.run(None, {info["input"]: image})
    kept = scores >= min_score
    objects = objects_to_photo(masks[kept], where)
    return list(zip(labels[kept], scores[kept], to_photo(boxes[kept], where), strict=True)), objects


def main(path, min_score=0.5, objects_path=None):
    with open("info.json", encoding="utf-8") as handle:
        info = json.load(handle)
    with open("labels.txt", encoding="utf-8") as handle:
        labels = handle.read().splitlines()
    found, objects = find(path, info, ort.InferenceSession("model.onnx"), min_score)
    if objects_path:
        Image.fromarray(objects, "L").save(objects_path)
    counts = np.bincount(objects.ravel(), minlength=len(found) + 1)
    for number, (label, score, box) in enumerate(found, start=1):
        print(labels[label], f"{score:.6f}", *(f"{value:.3f}" for value in box), counts[number], sep="\t")


if __name__ == "__main__":
    main(sys.argv[1], *(float(value) for value in sys.argv[2:3]), *sys.argv[3:4])
