"""A stored detection dataset in COCO's object detection format, so that its
user can take it elsewhere: its images as they were stored (resized) and its
boxes on them.

COCO's ``bbox`` is ``[x, y, width, height]`` from the top-left corner, in
the continuous pixels the store uses: a stored box ``x1, y1, x2, y2`` is
``[x1, y1, x2 - x1, y2 - y1]`` (coordinates rounded to 1/1000 pixel). A box
flagged difficult is a crowd (``iscrowd`` 1: kept, not scored). Ignore
regions are left out: COCO has no region without labels. Category ids are
the class indices plus 1, COCO's ids starting at 1; image and annotation ids
count from 1 in store order.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from trainer import jobfiles
from trainer.datastore import SplitReader, png_bytes
from trainer.tasks import detection

from .targets import DIFFICULT, Boxes, objects

IMAGES_AT_ONCE = 64  # images read from the store at a time while zipping
PLACES = 3  # decimals of a pixel kept in a bbox


def coco_json(targets: np.ndarray, classes: Sequence[str], file_names: Sequence[str], width: int,
              height: int) -> dict[str, Any]:
    """One split as COCO JSON: its targets (``Boxes``' N×K×6), the dataset's
    class names, each image's file name and the stored images' size."""
    if len(file_names) != len(targets):
        raise ValueError(f"{len(file_names)} file names for {len(targets)} images.")
    images = [{"id": i + 1, "file_name": name, "width": width, "height": height} for i, name in enumerate(file_names)]
    annotations = []
    for position, row in enumerate(targets):
        for x1, y1, x2, y2, label, flags in row[objects(row)].tolist():
            box = [round(x1, PLACES), round(y1, PLACES), round(x2 - x1, PLACES), round(y2 - y1, PLACES)]
            annotations.append({"id": len(annotations) + 1, "image_id": position + 1, "category_id": int(label) + 1,
                                "bbox": box, "area": round(box[2] * box[3], PLACES),
                                "iscrowd": int(int(flags) & DIFFICULT != 0)})
    categories = [{"id": index + 1, "name": name} for index, name in enumerate(classes)]
    return {"images": images, "annotations": annotations, "categories": categories}


def write_coco_zip(folder: Path, out: IO[bytes]) -> None:
    """The detection dataset in ``folder`` (a built dataset's, with its
    manifest) as a zip written to ``out``, which need not be seekable: per
    split with images, ``images/<split>/<position>.png`` and
    ``annotations/instances_<split>.json``. Memory holds a few images at a
    time; ValueError for a dataset of another task."""
    manifest = json.loads((folder / jobfiles.MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("task") != detection.TASK.name:
        raise ValueError(f"Only a detection dataset exports to COCO, not a {manifest.get('task')} one.")
    height, width, channels = manifest["image_shape"]
    with zipfile.ZipFile(out, "w") as archive:
        for split, entry in manifest["splits"].items():
            if not entry["count"]:
                continue
            reader = SplitReader(folder, split, manifest["encoding"], (height, width, channels), Boxes())
            names = [f"{position:06d}.png" for position in range(len(reader))]
            for start in range(0, len(reader), IMAGES_AT_ONCE):
                chosen = np.arange(start, min(start + IMAGES_AT_ONCE, len(reader)))
                for position, pixels in zip(chosen, reader.images(chosen), strict=True):
                    archive.writestr(f"images/{split}/{names[position]}", png_bytes(pixels))
            document = coco_json(reader.targets, manifest["classes"], names, width, height)
            archive.writestr(f"annotations/instances_{split}.json", json.dumps(document, ensure_ascii=False),
                             compress_type=zipfile.ZIP_DEFLATED)
