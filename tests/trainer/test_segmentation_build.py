"""Segmentation datasets built in this process (``trainer.dataset_build`` with
its real pool): label images read as palette indices, gray levels or
colours; masks placed exactly as their images in every resize mode; the
ignore value, binary masks, VOC's layout and splits; bad pairs reported
with file and reason and the good pairs kept."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.segmentationfiles import CLASSES, COLOURS, colour_map, colour_png, folders_source, palette_png, png, scene
from trainer.dataset_build import main
from trainer.datastore import SplitReader
from trainer.imageio import RESIZE_MODES, placement
from trainer.segmentation.labels import IGNORE, VOC_CLASSES
from trainer.segmentation.targets import CHUNK_IMAGES, Masks
from trainer.tasks.segmentation_plan import PEEK_LABELS

CONFIG = {"task": "segmentation", "channels": 3, "width": 32, "height": 24, "resize_mode": "squash", "val_percent": 0,
          "test_percent": 0, "encoding": "none", "quality": 90, "seed": 3, "mean": True, "layout": "auto",
          "label_type": "auto", "colour_map": "", "class_names": "", "ignore_value": 255, "binary": "auto",
          "placing": {"pad_width": None, "pad_height": None}}


def build(tmp_path: Path, source: Path | dict, **options) -> Path:
    job = tmp_path / "job"
    job.mkdir(parents=True)
    given = source if isinstance(source, dict) else {"type": "folder", "path": str(source)}
    (job / "config.json").write_text(json.dumps({**CONFIG, **options, "source": given}))
    assert main(str(job / "config.json")) == 0, (job / "events.jsonl").read_text()[-2000:]
    return job / "dataset"


def failure(tmp_path: Path, source: Path, **options) -> str:
    job = tmp_path / "job"
    job.mkdir()
    (job / "config.json").write_text(json.dumps({**CONFIG, **options, "source": {"type": "folder", "path": str(source)}}))
    assert main(str(job / "config.json")) == 1
    events = [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines()]
    assert not (job / "dataset").exists()
    return next(event["data"]["message"] for event in reversed(events) if event["kind"] == "error")


def stored(folder: Path, split: str = "train", encoding: str = "none", shape=(24, 32, 3)) -> SplitReader:
    return SplitReader(folder, split, encoding, shape, Masks())


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def skipped(folder: Path) -> dict[str, str]:
    """The skipped report by the file's name in its source (a folder's images are reported by their path)."""
    source = json.loads((folder / "manifest.json").read_text())["options"]["source"]
    prefix = source["path"] + "/" if source["type"] == "folder" else ""
    return {entry["path"].removeprefix(prefix): entry["reason"]
            for entry in json.loads((folder / "skipped.json").read_text())}


def nearest(size_in: int, size_out: int) -> np.ndarray:
    """The source pixel each of ``size_out`` pixels samples in Pillow's
    nearest-neighbour resize: centres stepped by the scale from half a step
    (accumulated, as Pillow does, so a centre on a pixel edge falls as its does)."""
    steps = np.full(size_out, size_in / size_out)
    steps[0] /= 2
    return np.minimum(np.floor(np.cumsum(steps)), size_in - 1).astype(int)


def expected_mask(classes: np.ndarray, width: int, height: int, mode: str, pad: tuple[int, int] | None) -> np.ndarray:
    """The stored mask worked out from the placement alone, without Pillow."""
    where = placement(classes.shape[1], classes.shape[0], width, height, mode, pad)
    canvas = np.full(where.canvas[::-1], IGNORE, dtype=np.uint8)
    canvas[:classes.shape[0], :classes.shape[1]] = classes
    scaled = canvas[nearest(canvas.shape[0], where.scaled[1])][:, nearest(canvas.shape[1], where.scaled[0])]
    out = np.full((height, width), IGNORE, dtype=np.uint8)
    rows = slice(where.crop[1], where.crop[1] + min(height, where.scaled[1]))
    cols = slice(where.crop[0], where.crop[0] + min(width, where.scaled[0]))
    kept = scaled[rows, cols]
    out[where.pad[1]:where.pad[1] + kept.shape[0], where.pad[0]:where.pad[0] + kept.shape[1]] = kept
    return out


@pytest.mark.parametrize("mode", RESIZE_MODES)
@pytest.mark.parametrize("pad", [None, (80, 60)])
def test_masks_are_placed_exactly_as_their_images_in_every_resize_mode(tmp_path, mode, pad):
    made = folders_source(tmp_path / "source", 3)
    folder = build(tmp_path, tmp_path / "source", resize_mode=mode, width=40, height=24,
                   placing={"pad_width": pad and pad[0], "pad_height": pad and pad[1]})
    reader = stored(folder, shape=(24, 40, 3))
    names = sorted(made)
    for position in range(len(reader)):
        mask = np.asarray(reader.targets[position])
        matches = [name for name in names if np.array_equal(mask, expected_mask(made[name], 40, 24, mode, pad))]
        assert len(matches) == 1, f"stored mask {position} is no source's mask placed in {mode}"
        # The mask lies over the pixels it labels: away from the shapes' edges
        # each class shows its own shade in the resized image.
        pixels = reader.image(position)[..., 0].astype(int)
        inner = mask.copy()
        for axis in (0, 1):
            for shift in (-1, 1):
                inner[np.roll(mask, shift, axis) != mask] = IGNORE
        assert (pixels[inner == 1] > 100).all() and (pixels[inner == 2] > 200).all() and (pixels[inner == 0] < 60).all()


def test_palette_labels_without_names_are_numbered_and_their_palette_kept_for_the_pages(tmp_path):
    folders_source(tmp_path / "source", 4)
    folder = build(tmp_path, tmp_path / "source")
    info = manifest(folder)
    assert info["task"] == "segmentation" and info["classes"] == ["class 0", "class 1", "class 2"]
    assert info["labelling"]["label_type"] == "values" and info["labelling"]["ignore"] == "255"
    assert info["labelling"]["colours"][:3] == [[0, 0, 0], [128, 0, 0], [0, 128, 0]]  # VOC's palette, from the PNGs
    assert info["splits"]["train"]["count"] == 4 and info["splits"]["train"]["per_class"] == [4, 4, 4]


def test_gray_labels_with_a_class_file_an_ignore_border_and_a_value_that_is_no_class(tmp_path):
    source = tmp_path / "source"
    made = folders_source(source, 3, labels="gray", border=1)
    (source / "classes.txt").write_text("\n".join(CLASSES) + "\n")
    bad = made["scene002"].copy()
    bad[0, 5] = 7
    (source / "labels" / "scene002.png").write_bytes(png(bad))
    folder = build(tmp_path, source, width=64, height=48)
    assert manifest(folder)["classes"] == list(CLASSES)
    reader = stored(folder, shape=(48, 64, 3))
    assert len(reader) == 2
    masks = np.asarray(reader.targets)
    assert sorted(masks.reshape(2, -1).tolist()) == sorted(made[n].reshape(-1).tolist() for n in ("scene000", "scene001"))
    assert (masks == IGNORE).any()  # the border is ignored, stored as 255
    assert skipped(folder) == {"images/scene002.png": "label image labels/scene002.png holds the value 7 (first at x 5, "
                                                       "y 0), which is not one of the 3 classes (0 to 2) nor the "
                                                       "ignore value 255"}


def test_colour_labels_read_by_the_colour_map_and_an_unknown_colour_reported(tmp_path):
    source = tmp_path / "source"
    made = folders_source(source, 3, labels="colour", border=1)
    pixels = np.asarray(Image.open(io.BytesIO(colour_png(made["scene001"])))).copy()
    pixels[3, 4] = (1, 2, 3)
    (source / "labels" / "scene001.png").write_bytes(png(pixels))
    folder = build(tmp_path, source, colour_map=colour_map() + "255 255 255 ignore\n", width=64, height=48)
    info = manifest(folder)
    assert info["classes"] == list(CLASSES) and info["labelling"]["colours"] == [list(c) for c in COLOURS]
    assert info["labelling"]["label_type"] == "colours" and info["labelling"]["ignore"] == "255 255 255"
    masks = np.asarray(stored(folder, shape=(48, 64, 3)).targets)
    assert sorted(masks.reshape(2, -1).tolist()) == sorted(made[n].reshape(-1).tolist() for n in ("scene000", "scene002"))
    assert skipped(folder) == {"images/scene001.png": "label image labels/scene001.png has the colour 1 2 3 (first at "
                                                       "x 4, y 3), which the colour map does not name"}


def test_colour_labels_without_a_colour_map_fail_naming_their_colours(tmp_path):
    folders_source(tmp_path / "source", 2, labels="colour")
    error = failure(tmp_path, tmp_path / "source")
    assert error.startswith("The label images are in colour (0 0 0, 30 200 30, 200 30 30 in the first): give a colour "
                            "map")


@pytest.mark.parametrize("colour_at", [PEEK_LABELS - 1, PEEK_LABELS])
def test_how_labels_are_read_is_chosen_from_the_first_label_images(tmp_path, colour_at):
    """A colour label image among the first ``PEEK_LABELS`` makes the source a
    colour one (and its colour map is asked for); one after them is a gray
    source's label image in colour, skipped with its reason."""
    source = tmp_path / "source"
    made = folders_source(source, PEEK_LABELS + 2, labels="gray")
    name = sorted(made)[colour_at]
    (source / "labels" / f"{name}.png").write_bytes(colour_png(made[name]))
    if colour_at < PEEK_LABELS:
        assert "give a colour map" in failure(tmp_path, source)
        return
    folder = build(tmp_path, source)
    assert len(stored(folder)) == PEEK_LABELS + 1
    assert skipped(folder) == {f"images/{name}.png": f"label image labels/{name}.png is in colour; its label type says "
                                                     f"values: choose colours, with a colour map"}


def test_binary_masks_are_foreground_unless_255_is_said_to_be_ignored(tmp_path):
    source = tmp_path / "source"
    (source / "images").mkdir(parents=True)
    (source / "labels").mkdir()
    for number in range(3):
        pixels, classes = scene(number)
        (source / "images" / f"{number}.png").write_bytes(png(pixels))
        (source / "labels" / f"{number}.png").write_bytes(png(np.where(classes == 1, 255, 0).astype(np.uint8)))
    folder = build(tmp_path, source, width=64, height=48)
    info = manifest(folder)
    assert info["classes"] == ["background", "foreground"] and info["labelling"]["binary"] == "foreground"
    assert "only the values 0 and 255" in info["labelling"]["guess"]
    masks = np.asarray(stored(folder, shape=(48, 64, 3)).targets)
    assert set(np.unique(masks)) == {0, 1}
    ignored = build(tmp_path / "again", source, width=64, height=48, binary="ignore", class_names="background\n")
    masks = np.asarray(stored(ignored, shape=(48, 64, 3)).targets)
    assert set(np.unique(masks)) == {0, IGNORE} and manifest(ignored)["classes"] == ["background"]


def test_bad_pairs_are_reported_with_file_and_reason_and_the_good_pairs_kept(tmp_path):
    source = tmp_path / "source"
    made = folders_source(source, 5)
    (source / "labels" / "scene001.png").write_bytes(palette_png(scene(1, (32, 24))[1]))  # not its image's size
    (source / "labels" / "scene002.png").unlink()  # an image without its label image
    (source / "labels" / "orphan.png").write_bytes(palette_png(made["scene000"]))  # a label image without its image
    (source / "labels" / "scene003.png").write_bytes(b"not a png")
    for encoding in ("none", "png"):
        folder = build(tmp_path / encoding, source, encoding=encoding, width=64, height=48)
        reader = stored(folder, encoding=encoding, shape=(48, 64, 3))
        assert len(reader) == 2
        assert sorted(np.asarray(reader.targets).reshape(2, -1).tolist()) == sorted(
            made[n].reshape(-1).tolist() for n in ("scene000", "scene004"))
        assert skipped(folder) == {
            "images/scene001.png": "label image labels/scene001.png is 32×24, its image 64×48",
            "images/scene002.png": "label image missing: no label image labels/scene002.* for it; the image is left out",
            "images/scene003.png": "label image labels/scene003.png: not an image (or a format that is not accepted)",
            "labels/orphan.png": "image missing: no image images/orphan.* for this label image",
        }


def test_pascal_voc_layout_from_a_zip_with_its_splits_classes_and_jpeg_images(tmp_path):
    archive = tmp_path / "voc.zip"
    made = {}
    with zipfile.ZipFile(archive, "w") as out:
        for number in range(6):
            pixels, classes = scene(number, border=1)
            image = io.BytesIO()
            Image.fromarray(pixels).save(image, format="JPEG", quality=95)
            out.writestr(f"VOC2012/JPEGImages/2007_{number:06d}.jpg", image.getvalue())
            out.writestr(f"VOC2012/SegmentationClass/2007_{number:06d}.png", palette_png(classes))
            made[number] = classes
        out.writestr("VOC2012/JPEGImages/2008_000099.jpg", image.getvalue())  # a detection image: no label, not reported
        out.writestr("VOC2012/ImageSets/Segmentation/train.txt", "2007_000000\n2007_000001\n2007_000002\n2007_000003\n")
        out.writestr("VOC2012/ImageSets/Segmentation/val.txt", "2007_000004\n2007_000005\n2007_000042\n")
    folder = build(tmp_path, {"type": "archive", "path": str(archive)}, width=64, height=48)
    info = manifest(folder)
    assert info["classes"] == list(VOC_CLASSES) and info["labelling"]["layout"] == "voc"
    assert info["splits"]["train"]["count"] == 4 and info["splits"]["val"]["count"] == 2
    assert skipped(folder) == {"ImageSets/Segmentation/val.txt": "lists 2007_000042, which has no label image in "
                                                                 "SegmentationClass"}
    # JPEG images are decoded whole (no draft), so the masks keep their pixels exactly.
    masks = np.asarray(stored(folder, "val", shape=(48, 64, 3)).targets)
    assert sorted(masks.reshape(2, -1).tolist()) == sorted(made[n].reshape(-1).tolist() for n in (4, 5))


@pytest.mark.parametrize("count", [CHUNK_IMAGES, CHUNK_IMAGES + 3])
def test_statistics_and_the_class_filter_over_more_masks_than_one_chunk(tmp_path, count):
    made = folders_source(tmp_path / "source", count, size=(16, 12))
    (tmp_path / "source" / "labels" / "scene001.png").write_bytes(palette_png(np.zeros((12, 16), np.uint8)))
    folder = build(tmp_path, tmp_path / "source", width=16, height=12, class_names="\n".join(CLASSES))
    masks = stored(folder, shape=(12, 16, 3)).targets
    assert isinstance(masks, np.memmap) and len(masks) == count
    statistics = Masks().statistics(masks, list(CLASSES))
    every = np.stack([made[name] for name in sorted(made)])
    every[1] = 0
    assert statistics["images"] == count and statistics["pixels"] == every.size and statistics["ignored"] == 0
    assert [c["pixels"] for c in statistics["per_class"]] == [int((every == c).sum()) for c in range(3)]
    assert [c["images"] for c in statistics["per_class"]] == [count, count - 1, count - 1]
    assert abs(sum(c["share"] for c in statistics["per_class"]) - 1) < 1e-9
    stored_order = {tuple(np.asarray(mask).ravel()) for mask in masks}
    assert stored_order == {tuple(mask.ravel()) for mask in every}
    without_disc = [position for position in range(count) if not (np.asarray(masks[position]) == 1).any()]
    assert Masks().images_of_class(masks, 1).tolist() == [p for p in range(count) if p not in without_disc]
    assert len(without_disc) == 1
