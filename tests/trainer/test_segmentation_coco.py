"""Semantic segmentation datasets whose masks are drawn from COCO JSON
annotations (``trainer.segmentation.shapes``), built in this process by the
real build: polygons, uncompressed and compressed RLEs painted in order as
their categories' classes over the background, crowd regions ignored, an
image without annotations all background; each bad annotation's image
reported with the annotation and why, the others kept; the layout found by
itself; and a category named background refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image
from pycocotools import mask as coco_mask

from tests.trainer.test_segmentation_build import build, failure, manifest, skipped, stored
from trainer.segmentation.labels import IGNORE

WIDTH, HEIGHT = 40, 30
RECTANGLE = [[4, 3, 20, 3, 20, 15, 4, 15]]
TRIANGLE = [[22, 5, 36, 5, 29, 25]]


def disc(cx: float, cy: float, radius: float) -> np.ndarray:
    ys, xs = np.mgrid[:HEIGHT, :WIDTH]
    return ((xs - cx) ** 2 + (ys - cy) ** 2 <= radius**2).astype(np.uint8)


def uncompressed(mask: np.ndarray) -> dict:
    """An uncompressed RLE of ``mask``, as COCO's crowd annotations hold them: the lengths of the runs of 0s and
    1s in column-major order, from a run of 0s."""
    counts, current, run = [], 0, 0
    for value in mask.ravel(order="F"):
        if value != current:
            counts.append(run)
            current, run = value, 0
        run += 1
    return {"size": [HEIGHT, WIDTH], "counts": [*counts, run]}


def drawn(segmentation) -> np.ndarray:
    """The mask pycocotools draws for a segmentation (the reference)."""
    if isinstance(segmentation, list):
        return coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(segmentation, HEIGHT, WIDTH))).astype(bool)
    return coco_mask.decode(coco_mask.frPyObjects(segmentation, HEIGHT, WIDTH)).astype(bool)


def coco_source(root: Path) -> dict[str, np.ndarray]:
    """``images/`` and ``annotations/instances.json``; the classes each usable image's mask should hold."""
    (root / "images").mkdir(parents=True)
    (root / "annotations").mkdir()
    rng = np.random.default_rng(3)
    for number in range(1, 6):
        Image.fromarray(rng.integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8)).save(root / "images" / f"{number}.png")
    crowd = uncompressed(disc(10, 20, 6))
    assert np.array_equal(drawn(crowd), disc(10, 20, 6) > 0)
    compressed = coco_mask.encode(np.asfortranarray(disc(30, 15, 8)))
    compressed = {"size": compressed["size"], "counts": compressed["counts"].decode("ascii")}
    images = [{"id": n, "file_name": f"{n}.png", "width": WIDTH, "height": HEIGHT} for n in range(1, 7)]
    annotations = [
        {"id": 1, "image_id": 1, "category_id": 7, "segmentation": RECTANGLE, "bbox": [4, 3, 16, 12], "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 3, "segmentation": TRIANGLE, "bbox": [22, 5, 14, 20], "iscrowd": 0},
        {"id": 3, "image_id": 1, "category_id": 3, "segmentation": crowd, "bbox": [4, 14, 12, 12], "iscrowd": 1},
        {"id": 4, "image_id": 2, "category_id": 3, "segmentation": compressed, "bbox": [22, 7, 16, 16], "iscrowd": 0},
        {"id": 5, "image_id": 4, "category_id": 7, "bbox": [1, 1, 5, 5], "iscrowd": 0},
        {"id": 6, "image_id": 5, "category_id": 7, "segmentation": {"size": [10, 10], "counts": [0, 100]},
         "bbox": [0, 0, 10, 10], "iscrowd": 0},
        {"id": 7, "image_id": 6, "category_id": 7, "segmentation": RECTANGLE, "bbox": [4, 3, 16, 12], "iscrowd": 0},
    ]
    (root / "annotations" / "instances.json").write_text(json.dumps({
        "images": images, "annotations": annotations,
        "categories": [{"id": 7, "name": "box"}, {"id": 3, "name": "disc"}]}))
    first = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
    first[drawn(RECTANGLE)] = 2  # categories in id order: disc (3) is class 1, box (7) class 2
    first[drawn(TRIANGLE)] = 1
    first[drawn(crowd)] = IGNORE
    second = np.where(disc(30, 15, 8) > 0, 1, 0).astype(np.uint8)
    return {"1.png": first, "2.png": second, "3.png": np.zeros((HEIGHT, WIDTH), dtype=np.uint8)}


def test_masks_are_drawn_from_a_coco_sources_polygons_and_rles(tmp_path):
    expected = coco_source(tmp_path / "source")
    folder = build(tmp_path, tmp_path / "source", width=WIDTH, height=HEIGHT)
    info = manifest(folder)
    assert info["classes"] == ["background", "disc", "box"]
    assert info["labelling"]["layout"] == "coco" and info["labelling"]["label_type"] == "shapes"
    masks = stored(folder, shape=(HEIGHT, WIDTH, 3)).targets
    assert sorted(np.asarray(m).tobytes() for m in masks) == sorted(m.tobytes() for m in expected.values())
    assert (expected["1.png"] == IGNORE).any() and (expected["1.png"] == 1).any() and (expected["1.png"] == 2).any()
    assert skipped(folder) == {
        "images/4.png": "annotations/instances.json, annotation 5: it has no segmentation (polygons or an RLE) to "
                        "draw its mask from",
        "images/5.png": "annotations/instances.json, annotation 6: its RLE is 10×10, the image 40×30",
        "annotations/instances.json": "image 6 (6.png): image missing: it is not in the source"}


def test_a_coco_sources_masks_follow_their_images_through_a_resize(tmp_path):
    coco_source(tmp_path / "source")
    folder = build(tmp_path, tmp_path / "source", width=20, height=15, resize_mode="squash")
    masks = np.asarray(stored(folder, shape=(15, 20, 3)).targets)
    assert masks.shape == (3, 15, 20) and set(np.unique(masks)) <= {0, 1, 2, IGNORE}


def test_a_category_named_background_is_refused(tmp_path):
    coco_source(tmp_path / "source")
    path = tmp_path / "source" / "annotations" / "instances.json"
    data = json.loads(path.read_text())
    data["categories"][0]["name"] = "Background"
    path.write_text(json.dumps(data))
    assert failure(tmp_path, tmp_path / "source", width=WIDTH, height=HEIGHT).startswith(
        "A category is named “background”")
