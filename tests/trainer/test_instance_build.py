"""Instance segmentation datasets built in this process by the real build
(``trainer.dataset_build`` with its real pool): each object's mask and
class stored exactly from COCO JSON (RLEs and polygons, a crowd region, an
object inside another kept on top) and from Pascal VOC's object and class
label images (their borders no object); objects resized by nearest
neighbour with their image; bad images reported with file and reason and
the good ones kept; the layout found by itself; the statistics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.instancefiles import (
    BUILD_CONFIG,
    CLASSES,
    HEIGHT,
    VOC_VALUES,
    WIDTH,
    box,
    coco_source,
    disc,
    palette_png,
    rle,
)
from tests.instancefiles import voc_source as make_voc_source
from trainer.dataset_build import main
from trainer.datastore import SplitReader
from trainer.instances.targets import CLASS, CROWD, INSTANCE, Instances
from trainer.segmentation.labels import VOC_CLASSES


def build(tmp_path: Path, source: Path, **options) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    config = {**BUILD_CONFIG, "encoding": "none", "val_percent": 0, **options,
              "source": {"type": "folder", "path": str(source)}}
    (job / "config.json").write_text(json.dumps(config))
    assert main(str(job / "config.json")) == 0, (job / "events.jsonl").read_text()[-2000:]
    return job / "dataset"


def failure(tmp_path: Path, source: Path, **options) -> str:
    job = tmp_path / "job"
    job.mkdir()
    config = {**BUILD_CONFIG, **options, "source": {"type": "folder", "path": str(source)}}
    (job / "config.json").write_text(json.dumps(config))
    assert main(str(job / "config.json")) == 1
    events = [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines()]
    return next(event["data"]["message"] for event in reversed(events) if event["kind"] == "error")


def stored(folder: Path, shape=(HEIGHT, WIDTH, 3)) -> np.ndarray:
    return np.asarray(SplitReader(folder, "train", "none", shape, Instances()).targets)


def skipped(folder: Path) -> dict[str, str]:
    prefix = json.loads((folder / "manifest.json").read_text())["options"]["source"]["path"] + "/"
    return {entry["path"].removeprefix(prefix): entry["reason"]
            for entry in json.loads((folder / "skipped.json").read_text())}


def expected_objects(objects: list[tuple[str, np.ndarray]], class_value=lambda name: CLASSES.index(name) + 1):
    """The stored H×W×2 of a scene's objects, numbered in their order."""
    found = np.zeros((*objects[0][1].shape, 2), dtype=np.uint8) if objects else np.zeros((HEIGHT, WIDTH, 2), np.uint8)
    for number, (name, mask) in enumerate(objects, start=1):
        found[mask] = (class_value(name), number)
    return found


def test_each_object_of_a_coco_source_is_stored_with_its_mask_and_class(tmp_path):
    made = coco_source(tmp_path / "source", 12)
    folder = build(tmp_path, tmp_path / "source")
    info = json.loads((folder / "manifest.json").read_text())
    assert info["classes"] == list(CLASSES) and info["labelling"]["layout"] == "coco"
    targets = stored(folder)
    assert targets.shape == (12, HEIGHT, WIDTH, 2) and targets.dtype == np.uint8
    assert sorted(t.tobytes() for t in targets) == sorted(expected_objects(o).tobytes() for o in made.values())
    assert sum(len(objects) for objects in made.values()) > 12  # some images hold several objects


def test_a_crowd_region_is_kept_as_one_with_its_class_and_an_object_inside_another_stays_whole(tmp_path):
    root = tmp_path / "source"
    (root / "images").mkdir(parents=True)
    Image.fromarray(np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)).save(root / "images" / "a.png")
    big = [[2, 2, 50, 2, 50, 40, 2, 40]]  # a polygon: 48×38 drawn by pycocotools
    small = disc(20, 20, 6)
    crowd = box(54, 4, 62, 44)
    annotations = [
        {"id": 1, "image_id": 1, "category_id": 2, "segmentation": big, "bbox": [2, 2, 48, 38], "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 1, "segmentation": rle(small), "bbox": [14, 14, 13, 13], "iscrowd": 0},
        {"id": 3, "image_id": 1, "category_id": 1, "segmentation": rle(crowd), "bbox": [54, 4, 8, 40], "iscrowd": 1}]
    (root / "instances.json").write_text(json.dumps({
        "images": [{"id": 1, "file_name": "a.png", "width": WIDTH, "height": HEIGHT}], "annotations": annotations,
        "categories": [{"id": 1, "name": "disc"}, {"id": 2, "name": "box"}]}))
    target = stored(build(tmp_path, root))[0]
    assert (target[small] == (1, 2)).all()  # the disc, on top of the box it lies in
    assert (target[crowd] == (1, CROWD)).all()
    box_pixels = (target[..., INSTANCE] == 1)
    assert (target[box_pixels][:, CLASS] == 2).all() and box_pixels.sum() > 30 * 30
    shown = Instances().shown(target[None], 0)
    assert [(o["class"], o["instance"]) for o in shown] == [(1, 1), (0, 2)]
    assert shown[1]["box"] == [14, 14, 27, 27]


def test_voc_object_and_class_images_give_each_object_its_class_and_borders_no_object(tmp_path):
    made = make_voc_source(tmp_path / "voc", 8)
    folder = build(tmp_path, tmp_path / "voc")
    info = json.loads((folder / "manifest.json").read_text())
    assert info["classes"] == list(VOC_CLASSES[1:]) and info["labelling"]["layout"] == "voc"
    targets = stored(folder)
    assert sorted(t.tobytes() for t in targets) == sorted(
        expected_objects(o, lambda name: VOC_VALUES[name]).tobytes() for o in made.values())
    assert set(np.unique(targets[..., CLASS])) == {0, VOC_VALUES["disc"], VOC_VALUES["box"]}


def test_bad_voc_images_are_reported_and_the_good_ones_kept(tmp_path):
    make_voc_source(tmp_path / "voc", 6)
    voc = tmp_path / "voc"
    (voc / "SegmentationClass" / "2007_000002.png").unlink()
    objects = np.asarray(Image.open(voc / "SegmentationObject" / "2007_000003.png"))
    classes = np.asarray(Image.open(voc / "SegmentationClass" / "2007_000003.png")).copy()
    first = np.argwhere(objects == 1)[0]
    classes[first[0], first[1]] = VOC_VALUES["box"] if classes[first[0], first[1]] != VOC_VALUES["box"] else \
        VOC_VALUES["disc"]
    palette_png(classes, voc / "SegmentationClass" / "2007_000003.png")
    palette_png(np.zeros((10, 10)), voc / "SegmentationObject" / "2007_000004.png")
    folder = build(tmp_path, voc)
    assert len(stored(folder)) == 3
    assert skipped(folder) == {
        "SegmentationObject/2007_000002.png": "class image missing: no SegmentationClass/2007_000002.png giving its "
                                              "objects' classes; the image is left out",
        "JPEGImages/2007_000003.png": f"object 1 of SegmentationObject/2007_000003.png has the classes "
                                      f"{min(VOC_VALUES.values())}, {max(VOC_VALUES.values())} in "
                                      f"SegmentationClass/2007_000003.png",
        "JPEGImages/2007_000004.png": f"label image SegmentationObject/2007_000004.png is 10×10, its image "
                                      f"{WIDTH}×{HEIGHT}"}


def test_objects_are_resized_by_nearest_neighbour_with_their_image(tmp_path):
    made = coco_source(tmp_path / "source", 6)
    folder = build(tmp_path, tmp_path / "source", width=32, height=24, resize_mode="squash")
    targets = stored(folder, shape=(24, 32, 3))

    def resized(found: np.ndarray) -> np.ndarray:
        return np.stack([np.asarray(Image.fromarray(found[..., c]).resize((32, 24), Image.Resampling.NEAREST))
                         for c in (CLASS, INSTANCE)], axis=-1)

    assert sorted(t.tobytes() for t in targets) == sorted(resized(expected_objects(o)).tobytes()
                                                          for o in made.values())


def test_the_layout_is_found_and_a_source_with_neither_is_refused(tmp_path):
    (tmp_path / "empty" / "images").mkdir(parents=True)
    Image.fromarray(np.zeros((8, 8, 3), dtype=np.uint8)).save(tmp_path / "empty" / "images" / "a.png")
    assert failure(tmp_path, tmp_path / "empty") == (
        "The source has neither a COCO JSON file of annotations nor Pascal VOC's SegmentationObject folder: instance "
        "masks come from one of them.")


def test_the_statistics_count_objects_per_class_per_image_and_their_sizes(tmp_path):
    made = coco_source(tmp_path / "source", 10, crowd=True)
    crowded = next(name for name, objects in made.items() if len(objects) > 1)
    folder = build(tmp_path, tmp_path / "source")
    found = Instances().statistics(stored(folder), list(CLASSES))
    objects = [(name, mask) for image, items in made.items() for n, (name, mask) in enumerate(items)
               if not (image == crowded and n == 1)]  # a crowd region
    assert found["images"] == 10 and found["objects"] == len(objects) and found["crowd_images"] == 1
    for index, name in enumerate(CLASSES):
        row = found["per_class"][index]
        assert row["objects"] == sum(1 for n, _ in objects if n == name)
        assert row["pixels"] == sum(int(m.sum()) for n, m in objects if n == name)
    assert sum(found["per_image"]["counts"]) == 10 and sum(found["sides"]["counts"]) == len(objects)
    assert found["per_class"][0]["share"] + found["per_class"][1]["share"] == pytest.approx(1.0)
