"""A segmenter evaluated by the evaluation job on new images with their
label images: a U-Net trained on scenes whose source named its validation
split by folder (``val/``); those same files given as a server folder score
exactly as the split (the same confusion matrix, pixel for pixel, through
the resize to the dataset's size); an archive with a bad pair of every kind
reports each with its file and reason and scores the rest; a source with
nothing usable fails with the reasons; and new label images are read with
the coding the dataset's were read with, for every kind of label image."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from pycocotools import mask as coco_mask

from tests.segmentationfiles import BUILD_CONFIG, colour_map, folders_source, png, trained_segmenter
from tests.trainfiles import error_of, evaluation_run
from trainer import jobfiles
from trainer.dataset_build import main as build_main
from trainer.datastore import SplitReader
from trainer.evaluation_files import IMAGES, REPORT
from trainer.segmentation.labels import IGNORE, read_classes
from trainer.segmentation.targets import Masks
from trainer.tasks.segmentation_plan import dataset_coding

VAL = range(16, 24)  # the scenes the source puts in its val/ folders


def build(job: Path, source: Path, **options) -> Path:
    """The real build of ``source`` (raw, 32×24 unless ``options`` say otherwise); its dataset folder."""
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({**BUILD_CONFIG, "encoding": "none", "val_percent": 0, **options,
                                                 "source": {"type": "folder", "path": str(source)}}))
    assert build_main(str(job / "config.json")) == 0, (job / "events.jsonl").read_text()[-2000:]
    return job / "dataset"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """``root/run``: a U-Net trained on ``root/build/dataset``, 24 scenes
    whose source (``root/source``) holds scenes 16 to 23 in ``val/``
    folders; ``root/new``: those eight pairs again, in plain ``images/``
    and ``labels/`` folders."""
    root = tmp_path_factory.mktemp("segmenter")
    folders_source(root / "made", 24, border=1)
    for kind in ("images", "labels"):
        for number in range(24):
            split = "val" if number in VAL else "train"
            (root / "source" / kind / split).mkdir(parents=True, exist_ok=True)
            shutil.copy(root / "made" / kind / f"scene{number:03d}.png", root / "source" / kind / split)
            if number in VAL:
                (root / "new" / kind).mkdir(parents=True, exist_ok=True)
                shutil.copy(root / "made" / kind / f"scene{number:03d}.png", root / "new" / kind)
    dataset = build(root / "build", root / "source")
    assert json.loads((dataset / jobfiles.MANIFEST).read_text())["splits"]["val"]["count"] == len(VAL)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trained_segmenter(root / "run", dataset, epochs=3, val_interval=3.0, snapshot_interval=3.0)
    finally:
        torch.set_num_threads(threads)
    return root


def report_of(out: Path) -> dict:
    return json.loads((out / REPORT).read_text())


def sorted_masks(masks: np.ndarray) -> list[bytes]:
    return sorted(np.ascontiguousarray(mask).tobytes() for mask in masks)


def test_the_split_given_again_as_a_folder_scores_exactly_as_the_split(model, tmp_path):
    code, split_out = evaluation_run(model, tmp_path / "split", {"type": "split", "split": "val"})
    assert code == 0, error_of(tmp_path / "split")
    code, out = evaluation_run(model, tmp_path / "folder", {"type": "folder", "path": str(model / "new")}, [model])
    assert code == 0, error_of(tmp_path / "folder")
    split, folder = report_of(split_out), report_of(out)
    assert folder["layout"] == "masks" and folder["source"] == "folder" and folder["skipped"] == []
    assert folder["count"] == split["count"] == len(VAL)
    assert folder["confusion"] == split["confusion"] and folder["ignored"] == split["ignored"] > 0
    for key in ("miou", "pixel_accuracy", "dice", "loss"):
        assert folder[key] == pytest.approx(split[key], abs=1e-9), key
    assert sorted(row["name"] for row in folder["worst"]) == [f"images/scene{n:03d}.png" for n in VAL]
    assert str(model) not in json.dumps(folder)
    stored = SplitReader(out, IMAGES, "png", (24, 32, 3), Masks())
    dataset = model / "build" / "dataset"
    assert sorted_masks(stored.targets) == sorted_masks(Masks().read(dataset, "val")), "nearest neighbour, as built"
    pictures = sorted(stored.image(i).tobytes() for i in range(len(stored)))
    assert pictures == sorted(image.tobytes() for image in np.load(dataset / "val-images.npy"))


def bad_pairs_zip(new: Path) -> io.BytesIO:
    """``new``'s pairs and one bad pair of every kind, zipped in one folder."""
    data = io.BytesIO()
    size = Image.open(new / "images" / "scene016.png").size
    with zipfile.ZipFile(data, "w") as archive:
        for path in sorted(new.rglob("*.png")):
            archive.write(path, f"scenes/{path.relative_to(new)}")
        scene = (new / "images" / "scene016.png").read_bytes()
        archive.writestr("scenes/images/small.png", scene)
        archive.writestr("scenes/labels/small.png", png(np.zeros((10, 10), dtype=np.uint8)))
        archive.writestr("scenes/images/seven.png", scene)
        archive.writestr("scenes/labels/seven.png", png(np.full(size[::-1], 7, dtype=np.uint8)))
        archive.writestr("scenes/images/alone.png", scene)
        archive.writestr("scenes/labels/orphan.png", png(np.zeros(size[::-1], dtype=np.uint8)))
        archive.writestr("scenes/images/broken.png", b"not an image")
        archive.writestr("scenes/labels/broken.png", png(np.zeros(size[::-1], dtype=np.uint8)))
    data.seek(0)
    return data


def test_an_archive_reports_each_bad_pair_and_scores_the_rest(model, tmp_path):
    code, folder_out = evaluation_run(model, tmp_path / "folder", {"type": "folder", "path": str(model / "new")}, [model])
    assert code == 0, error_of(tmp_path / "folder")
    archive = tmp_path / "scenes.zip"
    archive.write_bytes(bad_pairs_zip(model / "new").getvalue())
    code, out = evaluation_run(model, tmp_path / "archive", {"type": "archive", "path": str(archive)})
    assert code == 0, error_of(tmp_path / "archive")
    report, folder = report_of(out), report_of(folder_out)
    assert report["count"] == len(VAL) and report["confusion"] == folder["confusion"]
    reasons = {row["file"]: row["reason"] for row in report["skipped"]}
    assert reasons == {  # named as inside the archive's one top folder
        "images/small.png": "label image labels/small.png is 10×10, its image 64×48",
        "images/seven.png": "label image labels/seven.png holds the value 7 (first at x 0, y 0), which is not one of "
                            "the 3 classes (0 to 2) nor the ignore value 255",
        "images/alone.png": "label image missing: no label image labels/alone.* for it; the image is left out",
        "labels/orphan.png": "image missing: no image images/orphan.* for this label image",
        "images/broken.png": "The file cannot be used as an image: not an image (or a format that is not accepted)."}
    assert all(row["line"] is None for row in report["skipped"])
    assert not (out / "archive.tar").exists() and str(tmp_path) not in json.dumps(report)


def rle(mask: np.ndarray) -> dict:
    encoded = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": encoded["size"], "counts": encoded["counts"].decode("ascii")}


def test_new_images_with_a_coco_json_score_as_their_label_images(model, tmp_path):
    """The new images' masks as COCO RLEs (each class's region, the ignored border a crowd region) score exactly
    as their label images; an image with a category the model does not know is left out."""
    source = tmp_path / "coco"
    shutil.copytree(model / "new" / "images", source / "images")
    (source / "images" / "cat.png").write_bytes((model / "new" / "images" / "scene016.png").read_bytes())
    names = sorted(path.name for path in (source / "images").iterdir())
    images, annotations = [], []
    for number, name in enumerate(names, 1):
        images.append({"id": number, "file_name": name, "width": 64, "height": 48})
        classes = np.asarray(Image.open(model / "new" / "labels" / (name if name != "cat.png" else "scene016.png")))
        for category, (value, crowd) in enumerate(((1, 0), (2, 0), (IGNORE, 1)), 1):
            if name == "cat.png" and value == 2:
                category = 4
            region = classes == value
            ys, xs = np.nonzero(region)
            annotations.append({"id": len(annotations) + 1, "image_id": number, "category_id": category,
                                "segmentation": rle(region), "iscrowd": crowd,
                                "bbox": [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1),
                                         int(ys.max() - ys.min() + 1)]})
    (source / "annotations").mkdir()
    (source / "annotations" / "instances.json").write_text(json.dumps({
        "images": images, "annotations": annotations,
        "categories": [{"id": 1, "name": "Disc"}, {"id": 2, "name": "box"}, {"id": 3, "name": "border"},
                       {"id": 4, "name": "cat"}]}))
    code, out = evaluation_run(model, tmp_path / "coco-job", {"type": "folder", "path": str(source)}, [tmp_path])
    assert code == 0, error_of(tmp_path / "coco-job")
    code, folder_out = evaluation_run(model, tmp_path / "folder", {"type": "folder", "path": str(model / "new")},
                                      [model])
    assert code == 0, error_of(tmp_path / "folder")
    report, folder = report_of(out), report_of(folder_out)
    assert report["count"] == len(VAL) and report["confusion"] == folder["confusion"]
    assert report["skipped"] == [{"file": "images/cat.png", "line": None,
                                  "reason": "category cat is not one of the model's classes; the image is left out"}]


def test_a_source_with_nothing_usable_fails_with_the_first_reasons(model, tmp_path):
    source = tmp_path / "lonely"
    (source / "images").mkdir(parents=True)
    (source / "labels").mkdir()
    shutil.copy(model / "new" / "images" / "scene016.png", source / "images")
    (source / "labels" / "scene016.png").write_bytes(png(np.full((48, 64), 9, dtype=np.uint8)))
    code, out = evaluation_run(model, tmp_path / "job", {"type": "folder", "path": str(source)}, [tmp_path])
    message = error_of(tmp_path / "job")
    assert code != 0 and not out.exists()
    assert message.startswith("No usable image in the folder: images/scene016.png: label image labels/scene016.png "
                              "holds the value 9"), message
    code, _ = evaluation_run(model, tmp_path / "outside", {"type": "folder", "path": str(source)}, [model])
    assert code != 0 and error_of(tmp_path / "outside") == "The folder is not inside the folders this server may read."


@pytest.mark.parametrize("labels, options", [
    ("palette", {}),
    ("gray", {}),
    ("colour", {"colour_map": colour_map() + "255 255 255 ignore\n"}),
    ("binary", {"class_names": ""}),
    ("binary", {"class_names": "background\n", "binary": "ignore"}),
])
def test_new_label_images_are_read_with_the_datasets_coding(tmp_path, labels, options):
    made = folders_source(tmp_path / "source", 6, labels="gray" if labels == "binary" else labels, border=1)
    if labels == "binary":
        for name, classes in made.items():
            (tmp_path / "source" / "labels" / f"{name}.png").write_bytes(png(np.where(classes == 1, 255, 0)
                                                                            .astype(np.uint8)))
    dataset = build(tmp_path / "build", tmp_path / "source", width=64, height=48, **options)
    manifest = json.loads((dataset / jobfiles.MANIFEST).read_text())
    coding = dataset_coding(manifest["options"], manifest["labelling"], len(manifest["classes"]))
    read = [read_classes(str(path), coding, path.name, (64, 48))
            for path in sorted((tmp_path / "source" / "labels").iterdir())]
    assert sorted_masks(np.stack(read)) == sorted_masks(Masks().read(dataset, "train"))
