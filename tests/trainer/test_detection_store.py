"""Object detection's targets in the store: the boxes' file, what the pages
read of it, and its export to COCO."""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pycocotools.coco import COCO

from trainer import jobfiles, tasks
from trainer.datastore import EncodedSplitWriter, RawSplitWriter, SplitReader, encode, open_slots
from trainer.detection.coco_export import coco_json, write_coco_zip
from trainer.detection.targets import DIFFICULT, IGNORE, NO_CLASS, Boxes
from trainer.tasks import detection

CLASSES = ["car", "person", "bike"]
# Four images of a hand-made split: three boxes (one difficult); only an
# ignore region of every class; one box; nothing.
IMAGES = [
    [[0, 0, 10, 20, 0, 0], [100, 100, 150, 300, 1, DIFFICULT], [5, 5, 45, 37, 0, 0]],
    [[0, 0, 30, 30, NO_CLASS, IGNORE]],
    [[0, 0, 600, 8, 1, 0]],
    [],
]


def stored(tmp_path, images=IMAGES, split="train"):
    writer = Boxes().writer(Path("unused"), "train", len(images))
    for slot, rows in enumerate(images):
        writer.put(slot, rows)
    writer.save(tmp_path, split, np.arange(len(images)))
    return Boxes().read(tmp_path, split)


def test_boxes_keep_the_images_stored_padded_to_the_most_boxes_any_of_them_has(tmp_path):
    boxes = Boxes()
    writer = boxes.writer(Path("unused"), "train", 4)
    writer.put(0, IMAGES[0])
    writer.put(1, np.ones((5, 6), dtype=np.float32))  # a file that could not be decoded: not kept
    writer.put(2, [])
    writer.put(3, np.array(IMAGES[1]))
    writer.save(tmp_path, "val", np.array([0, 2, 3]))
    targets = boxes.read(tmp_path, "val")
    assert (tmp_path / "val-boxes.npy").is_file() and boxes.file("val") == "val-boxes.npy"
    assert targets.dtype == np.float32 and targets.shape == (3, 3, 6)  # K from the kept images alone
    assert targets[0].tolist() == IMAGES[0]
    assert targets[1].tolist() == [[0, 0, 0, 0, NO_CLASS, 0]] * 3
    assert targets[2].tolist() == [IMAGES[1][0], [0, 0, 0, 0, NO_CLASS, 0], [0, 0, 0, 0, NO_CLASS, 0]]


def test_a_split_without_boxes_keeps_one_padding_row_an_image(tmp_path):
    assert stored(tmp_path, [[], []]).shape == (2, 1, 6)
    assert stored(tmp_path, [], "test").shape == (0, 1, 6)


def test_a_raw_split_reads_back_each_image_with_its_own_boxes(tmp_path):
    writer = RawSplitWriter(tmp_path, "train", (2, 2, 1), 3, Boxes())
    images = open_slots(writer.slots())
    for slot in (0, 2):  # slot 1 is a file that could not be decoded
        images[slot] = slot + 1
        writer.mark(slot, IMAGES[slot])
    images.flush()
    del images
    writer.close()
    reader = SplitReader(tmp_path, "train", "none", (2, 2, 1), Boxes())
    assert len(reader) == 2 and reader.image(1).max() == 3
    assert Boxes().classes_of(reader.targets, 0) == [0, 1] and Boxes().classes_of(reader.targets, 1) == [1]


@pytest.mark.parametrize(("rows", "reason"), [
    ([1, 2, 3, 4, 0, 0], "M×6 array"),
    ([[0, 0, 1, 1, 0]], "M×6 array"),
    ([[0, 0, 1, float("nan"), 0, 0]], "not a number"),
    ([[5, 0, 1, 1, 0, 0]], "second corner"),
    ([[0, 0, 1, 1, 0.5, 0]], "whole number"),
    ([[0, 0, 1, 1, NO_CLASS, DIFFICULT]], "only for an ignore region"),
    ([[0, 0, 1, 1, 0, 4]], "flags"),
])
def test_the_writer_refuses_rows_that_break_the_layout(rows, reason):
    with pytest.raises(ValueError, match=reason):
        Boxes().writer(Path("unused"), "train", 1).put(0, rows)


def test_the_pages_find_an_images_classes_and_draw_its_boxes_and_ignore_regions(tmp_path):
    boxes, targets = Boxes(), stored(tmp_path)
    assert boxes.images_of_class(targets, 0).tolist() == [0]
    assert boxes.images_of_class(targets, 1).tolist() == [0, 2]
    assert boxes.images_of_class(targets, 2).tolist() == []
    assert [boxes.classes_of(targets, i) for i in range(4)] == [[0, 1], [], [1], []]
    assert boxes.shown(targets, 0)[1] == {"x1": 100.0, "y1": 100.0, "x2": 150.0, "y2": 300.0, "class": 1,
                                          "difficult": True, "ignore": False}
    assert boxes.shown(targets, 1) == [{"x1": 0.0, "y1": 0.0, "x2": 30.0, "y2": 30.0, "class": None,
                                        "difficult": False, "ignore": True}]
    assert len(boxes.shown(targets, 0)) == 3 and boxes.shown(targets, 3) == []


def test_a_splits_statistics_count_its_boxes_by_image_size_and_class(tmp_path):
    statistics = Boxes().statistics(stored(tmp_path), CLASSES)
    assert json.loads(json.dumps(statistics)) == statistics
    assert statistics == {
        "images": 4,
        "boxes": 4,
        "boxes_per_image": {"mean": 1.0, "max": 3, "histogram": {"edges": [0, 1, 2, 3, 4, 5, 10, 20, 50, 100],
                                                                  "counts": [2, 1, 0, 1, 0, 0, 0, 0, 0, 0]}},
        # widths 10, 50, 40, 600; heights 20, 200, 32, 8: a bin holds its lower edge
        "width": {"edges": [0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048], "counts": [0, 1, 0, 2, 0, 0, 0, 1, 0, 0]},
        "height": {"edges": [0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048], "counts": [0, 1, 1, 1, 0, 1, 0, 0, 0, 0]},
        "per_class": [{"name": "car", "boxes": 2, "images": 1}, {"name": "person", "boxes": 2, "images": 2},
                      {"name": "bike", "boxes": 0, "images": 0}],
        "images_without_boxes": 2,
        "difficult": 1,
        "ignore_regions": 1,
    }
    with pytest.raises(ValueError, match="class 1 of 1 classes"):
        Boxes().statistics(stored(tmp_path), ["car"])


class Pipe:
    """A stream that can only be written to, as a streamed response is."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


def detection_dataset(folder, splits):
    """A built detection dataset of 8×12 RGB PNG images: ``splits`` {split: the images' rows}."""
    shape = (8, 12, 3)
    rng = np.random.default_rng(0)
    pixels = {}
    for split, images in splits.items():
        writer = EncodedSplitWriter(folder, split, shape, len(images), Boxes(), "png", 90)
        pixels[split] = rng.integers(0, 256, (len(images), *shape), dtype=np.uint8)
        for image, rows in zip(pixels[split], images, strict=True):
            writer.add(encode(image, "png", 0), rows)
        writer.close()
    manifest = {"task": "detection", "classes": CLASSES, "image_shape": list(shape), "encoding": "png",
                "splits": {split: {"count": len(images)} for split, images in splits.items()}}
    (folder / jobfiles.MANIFEST).write_text(json.dumps(manifest))
    return pixels


def test_a_detection_dataset_exports_to_coco_that_pycocotools_reads_back(tmp_path):
    val = [[[1.5, 2.25, 10.3, 7, 2, 0]]]
    pixels = detection_dataset(tmp_path, {"train": IMAGES, "val": val, "test": []})
    out = Pipe()
    write_coco_zip(tmp_path, out)
    archive = zipfile.ZipFile(io.BytesIO(b"".join(out.chunks)))
    assert sorted(archive.namelist()) == [
        "annotations/instances_train.json", "annotations/instances_val.json", *(f"images/train/00000{i}.png" for i in range(4)),
        "images/val/000000.png"]
    with Image.open(io.BytesIO(archive.read("images/train/000002.png"))) as image:
        assert np.array_equal(np.asarray(image), pixels["train"][2])
    for split, images in (("train", IMAGES), ("val", val)):
        path = tmp_path / f"instances_{split}.json"
        path.write_bytes(archive.read(f"annotations/instances_{split}.json"))
        coco = COCO(str(path))
        assert [c["name"] for c in coco.loadCats(coco.getCatIds())] == CLASSES and coco.getCatIds() == [1, 2, 3]
        assert {(i["file_name"], i["width"], i["height"]) for i in coco.loadImgs(coco.getImgIds())} == {
            (f"{n:06d}.png", 12, 8) for n in range(len(images))}
        for position, rows in enumerate(images):
            found = coco.loadAnns(coco.getAnnIds(imgIds=[position + 1]))
            kept = [r for r in rows if not r[5] & IGNORE]  # ignore regions are left out
            assert len(found) == len(kept)
            for annotation, (x1, y1, x2, y2, label, flags) in zip(found, kept, strict=True):
                assert annotation["bbox"] == pytest.approx([x1, y1, x2 - x1, y2 - y1], abs=1e-3)
                assert annotation["area"] == pytest.approx((x2 - x1) * (y2 - y1), abs=1e-2)
                assert annotation["category_id"] == label + 1 and annotation["iscrowd"] == int(flags == DIFFICULT)


def test_coco_json_names_each_image_and_refuses_a_name_count_that_differs(tmp_path):
    document = coco_json(stored(tmp_path), CLASSES, ["a.png", "b.png", "c.png", "d.png"], 640, 480)
    assert [image["file_name"] for image in document["images"]] == ["a.png", "b.png", "c.png", "d.png"]
    assert [a["id"] for a in document["annotations"]] == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="3 file names for 4 images"):
        coco_json(stored(tmp_path), CLASSES, ["a.png", "b.png", "c.png"], 640, 480)


def test_only_a_detection_dataset_exports_to_coco(tmp_path):
    (tmp_path / jobfiles.MANIFEST).write_text(json.dumps({"task": "classification"}))
    with pytest.raises(ValueError, match="not a classification one"):
        write_coco_zip(tmp_path, Pipe())


def test_the_detection_task_heads_with_map50_and_trains_detectors_alone():
    task = detection.TASK
    assert task.headline.field == "map50" and [m["label"] for m in task.shown_metrics(3)] == [
        "mAP@0.5", "mAP@0.5:0.95", "precision at the score threshold",
        "recall at the score threshold"]
    assert isinstance(task.targets, Boxes) and task.model_uses == {tasks.uses.DETECT, tasks.uses.EVALUATE, tasks.uses.EXPORT}
    assert tasks.TASKS["detection"] is task and task.trains and task.network_sources == ("standard",)
    assert "lenet" not in task.networks and "fasterrcnn_mobilenet_v3_large_fpn" in task.networks
    assert task.evaluation_sources == ("split", "folder", "archive")
    assert tasks.task_of({}).trains
    classification = tasks.task_of({})
    assert task.takes_evaluation_option("score_threshold") and not classification.takes_evaluation_option("score_threshold")
    with pytest.raises(ValueError, match="Unknown evaluation option"):
        task.takes_evaluation_option("threshold")
    assert not {m.field for m in task.metrics} & {m.field for m in classification.metrics}
