"""A tiny built detection dataset, written straight with the store's writers
and ``Boxes`` as a build leaves one (images, boxes, manifest with task
"detection", skipped report): for the pages' tests, with no worker."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from trainer import jobfiles
from trainer.datastore import EncodedSplitWriter, encode
from trainer.detection.targets import DIFFICULT, IGNORE, NO_CLASS, Boxes

CLASSES = ("car", "person")
WIDTH, HEIGHT = 40, 30
# Each split's images as rows x1, y1, x2, y2, class, flags (stored pixels).
BOXES = {
    "train": [
        [[2, 3, 12, 10, 0, 0], [14, 2, 20, 20, 1, DIFFICULT]],
        [[1, 1, 9, 9, 1, 0], [20, 10, 30, 20, NO_CLASS, IGNORE]],
        [],
        [[0, 0, 40, 30, 0, 0]],
    ],
    "val": [
        [[5, 5, 15, 15, 0, 0]],
        [[10, 2, 30, 22, 1, 0]],
    ],
    "test": [],
}
SKIPPED = [{"path": "label_2/000003.txt", "class": "", "split": "train",
            "reason": "label_2/000003.txt, line 2: x2 (10) is left of x1 (40)"}]
SMALL_BOXES = 3


def make_detection_dataset(folder: Path, options: dict | None = None) -> Path:
    """The dataset of ``BOXES`` in ``folder`` (PNG store, colour); returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    shape = (HEIGHT, WIDTH, 3)
    splits = {}
    for split, images in BOXES.items():
        writer = EncodedSplitWriter(folder, split, shape, len(images), Boxes(), "png", 90)
        for rows in images:
            writer.add(encode(rng.integers(0, 255, shape, dtype=np.uint8), "png", 90), rows)
        writer.close()
        splits[split] = {"count": len(images), "per_class": [
            sum(any(r[4] == c and not r[5] & IGNORE for r in rows) for rows in images) for c in range(len(CLASSES))]}
    manifest = {"version": 1, "task": "detection", "options": options or {}, "classes": list(CLASSES),
                "image_shape": list(shape), "encoding": "png", "splits": splits,
                "skipped": {"total": len(SKIPPED), "per_class": {}}, "target_counts": {"small_boxes": SMALL_BOXES},
                "warnings": [], "mean": None, "seconds": 0.5, "files": {}}
    (folder / jobfiles.MANIFEST).write_text(json.dumps(manifest))
    (folder / jobfiles.SKIPPED).write_text(json.dumps(SKIPPED))
    return folder
