"""Instance segmentation's model archive: a Mask R-CNN trained here on
one-shape scenes, exported by the export job's own code. Its ONNX file, run
by onnxruntime on images of other sizes than it was trained at, gives what
the app's model gives, masks included; the archive's ``instances.py``, run
on its own beside the archive's files, finds in a photo the objects and
masks the app's Detect one finds in it."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch
from PIL import Image
from safetensors.torch import load as safetensors_load

from tests.exportfiles import exported, run_in, unpacked
from tests.instancefiles import one_shape, train_instances_once
from trainer import eventkinds, eventlog
from trainer.inference import load_model
from trainer.inference.detect import SCORE_FLOOR, detect
from trainer.jobfiles import MODEL_ARCHIVE
from trainer.tasks.detection_export import SCRIPT as DETECT_SCRIPT
from trainer.tasks.instance_export import FILES, SCRIPT


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_instances_once(tmp_path_factory.mktemp("instances")) / "run"


@pytest.fixture(scope="module")
def export(tmp_path_factory, trained) -> Path:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return exported(trained, tmp_path_factory.mktemp("export") / "job")
    finally:
        torch.set_num_threads(threads)


def test_the_export_job_writes_every_file_of_a_mask_rcnns_archive(export, trained, tmp_path):
    result = [event["data"] for event in eventlog.read_all(export) if event["kind"] == eventkinds.RESULT][-1]
    assert result["files"] == list(FILES) and result["classes"] == 2
    folder = unpacked(export, tmp_path)
    loaded = load_model(trained)
    weights = safetensors_load((folder / "weights.safetensors").read_bytes())
    assert all(torch.equal(weights[k], v) for k, v in loaded.model.state_dict().items())
    info = json.loads((folder / "info.json").read_text())
    assert info["task"] == "instance_segmentation" and info["outputs"] == ["boxes", "scores", "labels", "masks"]
    assert (folder / "instances.py").read_bytes() == SCRIPT.read_bytes()
    assert (folder / "detect.py").read_bytes() == DETECT_SCRIPT.read_bytes()
    assert (folder / "labels.txt").read_text().splitlines() == ["disc", "box"]
    assert "`masks` (N×1×H×W" in (folder / "README.md").read_text()


def test_the_onnx_file_gives_the_apps_boxes_and_masks_on_images_of_other_sizes(export, trained):
    loaded = load_model(trained)
    with zipfile.ZipFile(export / MODEL_ARCHIVE) as archive:
        session = onnxruntime.InferenceSession(archive.read("model.onnx"))
    found = 0
    for seed, size in enumerate([(32, 32), (48, 40), (24, 36)]):
        pixels, _ = one_shape(seed + 50, size)
        x = loaded.normalizer(torch.from_numpy(pixels.copy())[None])[0]
        with torch.no_grad():
            expected = loaded.model([x])[0]
        boxes, scores, labels, masks = session.run(None, {"image": x.numpy()})
        assert masks.shape == (len(scores), 1, size[1], size[0])
        assert np.allclose(boxes, expected["boxes"].numpy(), atol=1e-2) and np.allclose(
            scores, expected["scores"].numpy(), atol=1e-3)
        assert (labels == expected["labels"].numpy() - 1).all()
        assert np.abs(masks - expected["masks"].numpy()).max() < 1e-3
        found += len(scores)
    assert found, "something was found"


def test_instances_py_finds_in_a_photo_the_objects_and_masks_detect_one_finds(export, trained, tmp_path):
    folder = unpacked(export, tmp_path / "archive")
    pixels, _ = one_shape(77, (56, 44))
    photo = tmp_path / "photo.png"
    Image.fromarray(pixels).save(photo)
    answer = detect(load_model(trained), str(photo))
    rows = [line.split("\t") for line in run_in(folder, "instances.py", str(photo), str(SCORE_FLOOR),
                                                str(tmp_path / "objects.png"))]
    assert [row[0] for row in rows] == [box["class"] for box in answer["boxes"]] and rows
    assert [float(row[1]) for row in rows] == pytest.approx([box["score"] for box in answer["boxes"]], abs=1e-3)
    printed = np.array([[float(value) for value in row[2:6]] for row in rows])
    app = np.array([[box[k] for k in ("x1", "y1", "x2", "y2")] for box in answer["boxes"]])
    assert np.allclose(printed, app, atol=1e-2)
    theirs = np.asarray(Image.open(tmp_path / "objects.png"))
    ours = np.asarray(Image.open(io.BytesIO(base64.b64decode(answer["instances"]))))
    assert theirs.shape == ours.shape == (44, 56)
    assert (theirs != ours).sum() <= 2, "the same pixels but where a mask's probability is within 1e-3 of 0.5"
    assert [int(row[6]) for row in rows] == [int((theirs == n).sum()) for n in range(1, len(rows) + 1)]
