"""An instance segmentation model evaluated by the evaluation job on new
images with their objects: a Mask R-CNN trained on scenes whose COCO source
named its validation split (``instances_val.json``); those same images and
annotations given as a server folder score exactly as the split, their
objects stored as the build stored them; an image of a category the model
does not know is reported and left out; a VOC source for a model of other
classes is refused with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.instancefiles import BUILD_CONFIG, coco_source, one_shape, trained_instances, voc_source
from tests.trainfiles import error_of, evaluation_run
from trainer import jobfiles
from trainer.dataset_build import main as build_main
from trainer.datastore import SplitReader
from trainer.evaluation_files import IMAGES, REPORT
from trainer.instances.targets import Instances

COUNT, VAL = 24, range(19, 25)  # the images instances_val.json lists


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """``root/run``: a Mask R-CNN trained one epoch on ``root/build/dataset``
    (its validation split the images ``VAL``); ``root/new``: those images with
    their annotations again, as a plain COCO folder."""
    root = tmp_path_factory.mktemp("instances")
    coco_source(root / "source", COUNT, (32, 32), made_by=one_shape)
    everything = json.loads((root / "source" / "annotations" / "instances.json").read_text())
    (root / "source" / "annotations" / "instances.json").unlink()
    for name, kept in (("instances_train.json", lambda n: n not in VAL), ("instances_val.json", lambda n: n in VAL)):
        (root / "source" / "annotations" / name).write_text(json.dumps({
            **everything, "images": [i for i in everything["images"] if kept(i["id"])],
            "annotations": [a for a in everything["annotations"] if kept(a["image_id"])]}))
    (root / "new" / "images").mkdir(parents=True)
    (root / "new" / "annotations").mkdir()
    for number in VAL:
        shutil.copy(root / "source" / "images" / f"{number}.png", root / "new" / "images")
    shutil.copy(root / "source" / "annotations" / "instances_val.json", root / "new" / "annotations" / "new.json")
    (root / "build").mkdir()
    (root / "build" / "config.json").write_text(json.dumps({
        **BUILD_CONFIG, "width": 32, "height": 32, "encoding": "none", "val_percent": 0,
        "source": {"type": "folder", "path": str(root / "source")}}))
    assert build_main(str(root / "build" / "config.json")) == 0
    dataset = root / "build" / "dataset"
    assert json.loads((dataset / jobfiles.MANIFEST).read_text())["splits"]["val"]["count"] == len(VAL)
    trained_instances(root / "run", dataset, epochs=1)
    return root


def report_of(out: Path) -> dict:
    return json.loads((out / REPORT).read_text())


def test_the_split_given_again_as_a_folder_scores_exactly_as_the_split(model, tmp_path):
    code, split_out = evaluation_run(model, tmp_path / "split", {"type": "split", "split": "val"})
    assert code == 0, error_of(tmp_path / "split")
    code, out = evaluation_run(model, tmp_path / "folder", {"type": "folder", "path": str(model / "new")}, [model])
    assert code == 0, error_of(tmp_path / "folder")
    split, folder = report_of(split_out), report_of(out)
    assert folder["matched_by"] == "masks" and folder["source"] == "folder" and folder["skipped"] == []
    assert folder["count"] == split["count"] == len(VAL) and folder["boxes"] == split["boxes"] == len(VAL)
    for key in ("map50", "map", "precision", "recall", "loss", "detections"):
        assert folder[key] == pytest.approx(split[key], abs=1e-9), key
    stored = SplitReader(out, IMAGES, "png", (32, 32, 3), Instances())
    built = Instances().read(model / "build" / "dataset", "val")
    assert sorted(np.asarray(t).tobytes() for t in stored.targets) == sorted(np.asarray(t).tobytes() for t in built)


def test_an_image_of_a_category_the_model_does_not_know_is_left_out_with_the_reason(model, tmp_path):
    new = tmp_path / "new"
    shutil.copytree(model / "new", new)
    path = new / "annotations" / "new.json"
    data = json.loads(path.read_text())
    data["categories"].append({"id": 9, "name": "kite"})
    data["annotations"][0]["category_id"] = 9
    path.write_text(json.dumps(data))
    code, out = evaluation_run(model, tmp_path / "job", {"type": "folder", "path": str(new)}, [tmp_path])
    assert code == 0, error_of(tmp_path / "job")
    report = report_of(out)
    first = next(i["file_name"] for i in data["images"] if i["id"] == data["annotations"][0]["image_id"])
    assert report["count"] == len(VAL) - 1
    assert [(row["file"], row["reason"]) for row in report["skipped"]] == [
        (f"images/{first}", "category kite is not one of the model's classes; the image is left out")]


def test_a_voc_source_is_refused_for_a_model_of_other_classes(model, tmp_path):
    voc_source(tmp_path / "voc", 2)
    code, _ = evaluation_run(model, tmp_path / "job", {"type": "folder", "path": str(tmp_path / "voc")}, [tmp_path])
    assert code == 1
    assert error_of(tmp_path / "job") == ("Pascal VOC's object images give VOC's 20 classes, and this model's classes "
                                          "are others: give the images with a COCO JSON file naming its classes.")
