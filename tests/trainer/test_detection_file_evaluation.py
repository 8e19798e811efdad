"""A detector evaluated by the evaluation job on new labelled images and
at a score threshold of its user's: a Faster R-CNN trained three epochs on 48
rectangles; its validation split exported as a COCO archive scores exactly
as the split; a KITTI folder with bad files, a line the import refuses and a
class the model does not know reports each and scores the rest; a folder
with nothing usable fails with the reasons; and the threshold moves the
precision, the recall and the listings."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.detectionfiles import kitti_line, train_detector_once
from tests.trainfiles import error_of, evaluation_run
from trainer.datastore import SplitReader, png_bytes
from trainer.detection.coco_export import coco_json
from trainer.detection.targets import Boxes
from trainer.evaluation_files import IMAGES, REPORT, RESULTS

SPLIT = {"type": "split", "split": "val"}


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """The rectangles' dataset (``root/build/dataset``, its KITTI source in ``root/kitti``) and a detector trained
    on it (``root/run``)."""
    return train_detector_once(tmp_path_factory.mktemp("detector"))  # on one thread


def read(folder: Path, name: str):
    return json.loads((folder / name).read_text())


@pytest.fixture(scope="module")
def split_output(model, tmp_path_factory) -> Path:
    """The output of the evaluation of the validation split, at the default threshold."""
    code, output = evaluation_run(model, tmp_path_factory.mktemp("split") / "job", SPLIT)
    assert code == 0
    return output


def val_as_coco_zip(model: Path, path: Path) -> Path:
    """The dataset's validation split as a COCO archive: its stored images and their boxes."""
    dataset = model / "build" / "dataset"
    manifest = json.loads((dataset / "manifest.json").read_text())
    height, width, channels = manifest["image_shape"]
    reader = SplitReader(dataset, "val", manifest["encoding"], (height, width, channels), Boxes())
    names = [f"{position:03d}.png" for position in range(len(reader))]
    with zipfile.ZipFile(path, "w") as archive:
        for name, position in zip(names, range(len(reader)), strict=True):
            archive.writestr(f"val/images/{name}", png_bytes(reader.image(position)))
        archive.writestr("val/annotations/instances.json",
                         json.dumps(coco_json(reader.targets, manifest["classes"], names, width, height)))
    return path


def test_the_validation_split_as_a_coco_archive_scores_as_the_split(model, split_output, tmp_path):
    split_report = read(split_output, REPORT)
    assert split_report["map50"] > 0 and split_report["detections"] > 0, "something to compare"
    code, output = evaluation_run(model, tmp_path / "job", {"type": "archive", "path": str(val_as_coco_zip(
        model, tmp_path / "val.zip")), "label_format": "auto"})
    assert code == 0, error_of(tmp_path / "job")
    report = read(output, REPORT)
    for key in ("count", "boxes", "detections", "map50", "map", "precision", "recall", "per_class", "pr_curves",
                "false_positives_total", "missed_total", "worst_total", "score_threshold"):
        assert report[key] == split_report[key], key
    assert report["source"] == "archive" and report["skipped"] == []
    assert [image["name"] for image in report["worst"]] == [f"val/images/{i['index']:03d}.png" for i in report["worst"]]
    stored = SplitReader(output, IMAGES, "png", (32, 32, 3), Boxes())
    assert len(stored) == report["count"] == 12
    assert not (output / "archive.tar").exists()


def test_a_kitti_folder_reports_bad_files_and_unknown_classes_and_scores_the_rest(model, tmp_path):
    folder = shutil.copytree(model / "kitti", tmp_path / "kitti")
    (folder / "image_2" / "broken.png").write_bytes(b"not a png")
    (folder / "label_2" / "broken.txt").write_text(kitti_line("Car", (1, 1, 9, 9)))
    shutil.copy(folder / "image_2" / "000000.png", folder / "image_2" / "short.png")
    (folder / "label_2" / "short.txt").write_text("Car 0 0 0 1 1 9\n")
    shutil.copy(folder / "image_2" / "000001.png", folder / "image_2" / "truck.png")
    (folder / "label_2" / "truck.txt").write_text(kitti_line("Truck", (2, 2, 20, 20)) + kitti_line("car", (3, 3, 9, 9)))
    code, output = evaluation_run(model, tmp_path / "job", {"type": "folder", "path": str(folder), "label_format": "kitti"},
                            [tmp_path])
    assert code == 0, error_of(tmp_path / "job")
    report = read(output, REPORT)
    assert report["count"] == 48 + 1, "the 48 images and the one with a known class kept"
    assert report["boxes"] == 48 + 1, "the Truck box left out, the car one named in lower case kept"
    assert report["per_class"]["Car"]["boxes"] == 24 + 1
    reasons = {(row["file"], row["line"]): row["reason"] for row in report["skipped"]}
    assert len(report["skipped"]) == len(reasons) == 3
    assert reasons[("label_2/short.txt", 1)] == "has 7 columns; a KITTI line has 15 (16 with a score)"
    assert reasons[("image_2/broken.png", None)].startswith("The file cannot be used as an image")
    assert reasons[("label_2", None)] == "class 'Truck' is not in the class list; its 1 box is left out"
    assert str(tmp_path) not in json.dumps(report), "no server path in the report"
    assert len(read(output, RESULTS)["rows"]) == report["detections"]


def test_a_folder_with_no_usable_image_fails_with_the_first_reasons(model, tmp_path):
    folder = tmp_path / "kitti"
    (folder / "image_2").mkdir(parents=True)
    (folder / "label_2").mkdir()
    (folder / "image_2" / "a.png").write_bytes(b"not a png")
    (folder / "label_2" / "a.txt").write_text(kitti_line("Car", (1, 1, 9, 9)))
    (folder / "label_2" / "b.txt").write_text(kitti_line("Car", (1, 1, 9, 9)))
    code, output = evaluation_run(model, tmp_path / "job", {"type": "folder", "path": str(folder)}, [tmp_path])
    assert code != 0 and not output.exists()
    message = error_of(tmp_path / "job")
    assert message.startswith("No usable image in the folder: ")
    assert "image_2/a.png: The file cannot be used as an image" in message
    assert "label_2/b.txt: image missing: no image file image_2/b.* for it" in message


def test_a_folder_outside_the_roots_is_refused_by_the_job_too(model, tmp_path):
    code, output = evaluation_run(model, tmp_path / "job", {"type": "folder", "path": str(model / "kitti")}, [tmp_path])
    assert code != 0 and error_of(tmp_path / "job") == "The folder is not inside the folders this server may read."


def test_the_score_threshold_moves_precision_recall_and_the_listings(model, split_output, tmp_path):
    report, rows = read(split_output, REPORT), read(split_output, RESULTS)["rows"]
    assert report["score_threshold"] == 0.5, "the default"
    top = max(row["score"] for row in rows if row["matched"])
    below, above = top - 0.0005, top + 0.0005
    reports = {}
    for threshold in (below, above):
        code, output = evaluation_run(model, tmp_path / str(threshold), SPLIT, score_threshold=threshold)
        assert code == 0, error_of(tmp_path / str(threshold))
        reports[threshold] = found = read(output, REPORT)
        assert found["score_threshold"] == threshold
        assert found["map50"] == report["map50"], "mAP takes every score"
        assert found["false_positives_total"] == sum(row["matched"] is False and row["score"] >= threshold
                                                     for row in rows)
        assert all(fp["score"] >= threshold for fp in found["false_positives"])
        for image in found["worst"]:
            assert all(d["score"] >= threshold for d in image["detections"])
    crossing = sum(bool(row["matched"]) and below <= row["score"] < above for row in rows)
    assert crossing >= 1
    assert reports[above]["missed_total"] == reports[below]["missed_total"] + crossing
    assert reports[above]["recall"] == 0 < reports[below]["recall"], "no box is found scoring above the best hit"
    assert reports[above]["precision"] == 0 < reports[below]["precision"]
