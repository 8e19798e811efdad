"""Detection datasets built in this process (``trainer.dataset_build`` with its
real pool): boxes land on the stored images exactly where their pixels do,
in every resize mode, with DIGITS' padding and after a JPEG draft decode;
bad lines are reported with their file and line and their images left out;
an import with no usable image fails with the first reasons."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from trainer.dataset_build import main
from trainer.datastore import SplitReader
from trainer.detection.targets import CLASS, FLAGS, IGNORE, Boxes
from trainer.imageio import placement

CONFIG = {"task": "detection", "channels": 3, "width": 32, "height": 24, "resize_mode": "squash", "val_percent": 0,
          "test_percent": 0, "encoding": "none", "quality": 90, "seed": 3, "mean": True, "label_format": "auto",
          "class_map": None, "placing": {"pad_width": None, "pad_height": None, "min_box_size": 0}}
SIZE = (64, 48)  # the source images' width and height: squash halves both axes


def painted(size: tuple[int, int], box: tuple[int, int, int, int], fmt: str = "PNG") -> bytes:
    """A dark image with a white rectangle over ``box`` (pixel edges)."""
    pixels = np.full((size[1], size[0], 3), 20, dtype=np.uint8)
    x1, y1, x2, y2 = box
    pixels[y1:y2, x1:x2] = 235
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return out.getvalue()


def kitti_line(name: str, box: tuple[float, float, float, float]) -> str:
    return f"{name} 0.00 0 0.00 {box[0]:.2f} {box[1]:.2f} {box[2]:.2f} {box[3]:.2f} 1.5 1.6 3.9 1.0 1.0 10.0 0.0\n"


def kitti_folder(root: Path, boxes: dict[str, list[tuple[str, tuple[int, int, int, int]]]],
                 size: tuple[int, int] = SIZE, fmt: str = "PNG") -> Path:
    (root / "image_2").mkdir(parents=True)
    (root / "label_2").mkdir()
    for stem, objects in boxes.items():
        first = next((box for name, box in objects if name != "DontCare"), (0, 0, 1, 1))
        suffix = ".png" if fmt == "PNG" else ".jpg"
        (root / "image_2" / f"{stem}{suffix}").write_bytes(painted(size, first, fmt))
        (root / "label_2" / f"{stem}.txt").write_text("".join(kitti_line(name, box) for name, box in objects))
    return root


def build(tmp_path: Path, source: dict, **options) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    (job / "config.json").write_text(json.dumps({**CONFIG, **options, "source": source}))
    assert main(str(job / "config.json")) == 0, (job / "events.jsonl").read_text()[-2000:]
    return job / "dataset"


def stored(folder: Path, split: str = "train") -> tuple[SplitReader, np.ndarray]:
    reader = SplitReader(folder, split, "none", (24, 32, 3), Boxes())
    return reader, reader.targets


def bright_box(pixels: np.ndarray, content: tuple[int, int, int, int] | None = None) -> tuple[int, int, int, int]:
    """The pixel edges of the white rectangle in a stored image, looked for
    in ``content`` (x1, y1, x2, y2: where the source's pixels are, not the
    noise of a fill) or everywhere."""
    x1, y1, x2, y2 = content or (0, 0, pixels.shape[1], pixels.shape[0])
    ys, xs = np.nonzero(pixels[y1:y2, x1:x2, 0] > 128)
    return int(xs.min()) + x1, int(ys.min()) + y1, int(xs.max()) + 1 + x1, int(ys.max()) + 1 + y1


def test_kitti_boxes_land_where_their_pixels_do_and_dont_care_regions_are_kept_as_ignored(tmp_path):
    source = kitti_folder(tmp_path / "kitti", {
        "000001": [("Car", (8, 8, 40, 24)), ("DontCare", (50, 30, 60, 44))],
        "000002": [("Pedestrian", (20, 6, 36, 46))],
    })
    folder = build(tmp_path, {"type": "folder", "path": str(source)})
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["task"] == "detection" and manifest["classes"] == ["Car", "Pedestrian"]
    assert manifest["splits"]["train"]["count"] == 2 and manifest["splits"]["train"]["per_class"] == [1, 1]
    reader, targets = stored(folder)
    for position in range(len(reader)):
        rows = targets[position]
        objects = rows[(rows[:, CLASS] >= 0) & (rows[:, FLAGS] == 0)]
        assert len(objects) == 1
        assert tuple(objects[0, :4]) == pytest.approx(bright_box(reader.image(position)), abs=1)
        assert tuple(objects[0, :4] * 2) in {(8, 8, 40, 24), (20, 6, 36, 46)}  # squash halves both axes, exactly
    ignored = targets[..., FLAGS] == IGNORE
    assert ignored.sum() == 1 and tuple(targets[ignored][0, :4]) == (25, 15, 30, 22)


@pytest.mark.parametrize("mode", ["squash", "crop", "fill", "half_crop"])
def test_every_resize_mode_moves_the_boxes_with_the_pixels(tmp_path, mode):
    source = kitti_folder(tmp_path / "kitti", {"a": [("Car", (10, 6, 50, 30))], "b": [("Car", (0, 20, 30, 40))]},
                          size=(80, 40))
    reader, targets = stored(build(tmp_path, {"type": "folder", "path": str(source)}, resize_mode=mode))
    where = placement(80, 40, 32, 24, mode)
    shift_x, shift_y = where.shift
    content = (max(0, shift_x), max(0, shift_y), min(32, shift_x + where.scaled[0]), min(24, shift_y + where.scaled[1]))
    assert len(reader) == 2
    for position in range(len(reader)):
        box = tuple(targets[position, 0, :4])
        assert box == pytest.approx(bright_box(reader.image(position), content), abs=1.01), (mode, box)


def test_padding_and_the_minimum_box_size(tmp_path):
    source = kitti_folder(tmp_path / "kitti", {
        "small": [("Car", (8, 8, 40, 24)), ("Car", (50, 40, 53, 43))],  # the second is 1.5 px once stored
        "large": [("Car", (8, 8, 40, 24))],
    }, size=SIZE)
    (source / "image_2" / "large.png").write_bytes(painted((200, 48), (8, 8, 40, 24)))
    folder = build(tmp_path, {"type": "folder", "path": str(source)},
                   placing={"pad_width": 128, "pad_height": 96, "min_box_size": 2})
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["target_counts"] == {"small_boxes": 1}
    skipped = json.loads((folder / "skipped.json").read_text())
    assert [entry["reason"] for entry in skipped] == ["200×48 is larger than the padding size 128×96"]
    reader, targets = stored(folder)
    assert len(reader) == 1 and (targets[0, :, CLASS] >= 0).sum() == 1
    # padded to 128×96 at the right and bottom, then squashed to 32×24: a quarter on each axis
    assert tuple(targets[0, 0, :4]) == (2, 2, 10, 6)
    assert bright_box(reader.image(0)) == (2, 2, 10, 6)


def test_a_jpeg_decoded_in_draft_keeps_its_boxes_in_place(tmp_path):
    source = kitti_folder(tmp_path / "kitti", {"big": [("Car", (64, 48, 320, 240))]}, size=(512, 384), fmt="JPEG")
    reader, targets = stored(build(tmp_path, {"type": "folder", "path": str(source)}))
    assert tuple(targets[0, 0, :4]) == (4, 3, 20, 15)
    assert bright_box(reader.image(0)) == pytest.approx((4, 3, 20, 15), abs=1)


def test_bad_lines_are_reported_with_file_and_line_and_the_good_images_kept(tmp_path):
    source = kitti_folder(tmp_path / "kitti", {
        "good": [("Car", (8, 8, 40, 24))],
        "reversed": [("Car", (8, 8, 40, 24)), ("Car", (40, 8, 10, 24))],
        "outside": [("Car", (8, 8, 90, 24))],
    })
    (source / "image_2" / "unlabelled.png").write_bytes(painted(SIZE, (1, 1, 2, 2)))
    zipped = tmp_path / "kitti.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for path in sorted(source.rglob("*")):
            archive.write(path, str(path.relative_to(source.parent)))
    folder = build(tmp_path, {"type": "archive", "path": str(zipped)})
    reader, targets = stored(folder)
    assert len(reader) == 1 and tuple(targets[0, 0, :4] * 2) == (8, 8, 40, 24)
    reasons = {entry["path"]: entry["reason"] for entry in json.loads((folder / "skipped.json").read_text())}
    assert "line 2" in reasons["label_2/reversed.txt"] and "left of" in reasons["label_2/reversed.txt"]
    assert "image_2/unlabelled.png" in reasons
    outside = next(reason for path, reason in reasons.items() if "outside" in path)
    assert "line 1" in outside and "outside the 64×48 image" in outside
    assert not (folder.parent / "dataset" / "archive.tar").exists()


def test_an_import_with_no_usable_image_fails_with_the_first_reasons(tmp_path):
    source = kitti_folder(tmp_path / "kitti", {"reversed": [("Car", (40, 8, 10, 24))]})
    job = tmp_path / "job"
    job.mkdir()
    (job / "config.json").write_text(json.dumps({**CONFIG, "source": {"type": "folder", "path": str(source)}}))
    assert main(str(job / "config.json")) == 1
    events = [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines()]
    message = next(e["data"]["message"] for e in reversed(events) if e["kind"] == "error")
    assert message.startswith("No usable image in the source:") and "label_2/reversed.txt, line 1" in message
    assert not (job / "dataset").exists()


def test_yolo_fractions_become_pixels_and_its_split_folders_are_kept(tmp_path):
    root = tmp_path / "yolo"
    for split, stem in (("train", "a"), ("val", "b")):
        (root / "images" / split).mkdir(parents=True)
        (root / "labels" / split).mkdir(parents=True)
        (root / "images" / split / f"{stem}.png").write_bytes(painted(SIZE, (16, 12, 48, 36)))
        # centre (0.5, 0.5), size (0.5, 0.5) of 64×48: pixels 16..48 × 12..36
        (root / "labels" / split / f"{stem}.txt").write_text("1 0.5 0.5 0.5 0.5\n")
    (root / "classes.txt").write_text("cat\ndog\n")
    folder = build(tmp_path, {"type": "folder", "path": str(root)}, val_percent=50)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["classes"] == ["cat", "dog"]
    assert {s: manifest["splits"][s]["count"] for s in ("train", "val", "test")} == {"train": 1, "val": 1, "test": 0}
    for split in ("train", "val"):
        _, targets = stored(folder, split)
        assert tuple(targets[0, 0]) == (8, 6, 24, 18, 1, 0)


def test_voc_difficult_boxes_are_flagged(tmp_path):
    root = tmp_path / "voc"
    (root / "Annotations").mkdir(parents=True)
    (root / "JPEGImages").mkdir()
    (root / "JPEGImages" / "1.png").write_bytes(painted(SIZE, (16, 12, 48, 36)))
    objects = "".join(f"<object><name>{name}</name><difficult>{hard}</difficult><bndbox><xmin>17</xmin><ymin>13</ymin>"
                      f"<xmax>48</xmax><ymax>36</ymax></bndbox></object>" for name, hard in (("dog", 0), ("cat", 1)))
    (root / "Annotations" / "1.xml").write_text(f"<annotation><filename>1.png</filename><size><width>64</width>"
                                                f"<height>48</height><depth>3</depth></size>{objects}</annotation>")
    _, targets = stored(build(tmp_path, {"type": "folder", "path": str(root)}, label_format="voc"))
    assert [tuple(row) for row in targets[0]] == [(8, 6, 24, 18, 1, 0), (8, 6, 24, 18, 0, 1)]


def test_an_image_with_more_boxes_than_an_image_may_have_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr("trainer.detection.targets.MAX_ROWS", 3)
    source = kitti_folder(tmp_path / "kitti", {"many": [("Car", (8, 8, 40, 24))] * 4, "few": [("Car", (8, 8, 40, 24))] * 3})
    folder = build(tmp_path, {"type": "folder", "path": str(source)})
    reader, targets = stored(folder)
    assert len(reader) == 1 and targets.shape[1] == 3
    skipped = json.loads((folder / "skipped.json").read_text())
    assert [entry["reason"] for entry in skipped] == ["label_2/many.txt: 4 boxes, more than the 3 an image may have"]


def test_a_zip_whose_labels_were_read_before_the_pool_started_is_decoded_by_every_process(tmp_path):
    """The planner reads a VOC zip's XML files in the build's own process,
    which opens the archive; the pool's processes, forked after, must each
    read the images through their own handle, not the inherited one (whose
    position they would move under each other: "Bad CRC-32"). Over
    ``TASKS_PER_BATCH`` images a process, so that both decode at once."""
    from trainer.dataset_build import TASKS_PER_BATCH

    count = 8 * TASKS_PER_BATCH
    rng = np.random.default_rng(0)
    archive = tmp_path / "voc.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for number in range(count):
            pixels = rng.integers(0, 255, (SIZE[1], SIZE[0], 3), dtype=np.uint8)
            data = io.BytesIO()
            Image.fromarray(pixels).save(data, format="PNG")
            out.writestr(f"VOC/JPEGImages/{number}.png", data.getvalue())
            out.writestr(f"VOC/Annotations/{number}.xml", (
                f"<annotation><filename>{number}.png</filename><size><width>64</width><height>48</height>"
                "<depth>3</depth></size><object><name>dog</name><bndbox><xmin>4</xmin><ymin>4</ymin><xmax>40</xmax>"
                "<ymax>30</ymax></bndbox></object></annotation>"))
    reader, targets = stored(build(tmp_path, {"type": "archive", "path": str(archive)}, label_format="voc"))
    assert len(targets) == count and all(tuple(rows[0]) == (1.5, 1.5, 20, 15, 0, 0) for rows in targets)  # VOC counts from 1
