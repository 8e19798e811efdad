"""Loading a trained model and classifying images with it: the same
predictions training's own evaluation makes, and a clear refusal of
every bad input."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.inferfiles import bar_images, png, trained_job
from tests.trainfiles import make_dataset
from trainer import checkpoint, jobfiles
from trainer.inference import InferenceError, ModelNotFound, classify, evaluate_split, load_model, logits, preprocess
from trainer.networks import build


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("bars") / "dataset")


@pytest.fixture(scope="module")
def job(tmp_path_factory, dataset) -> Path:
    return trained_job(tmp_path_factory.mktemp("lenet") / "job", dataset, epochs=2)


def test_a_finished_model_loads_its_best_snapshot_in_eval_mode(job):
    loaded = load_model(job)
    assert loaded.snapshot == jobfiles.BEST and loaded.note is None
    assert not loaded.model.training
    assert loaded.classes == ["horizontal", "vertical", "diagonal", "antidiagonal"]
    assert (loaded.channels, loaded.input_size, loaded.resize_mode, loaded.mean_mode) == (1, (28, 28), "squash", "image")


def test_classify_gets_new_bars_right(job):
    loaded = load_model(job)
    images = bar_images(40)
    tops = classify(loaded, [image for image, _ in images], batch_size=16)
    right = sum(top[0]["index"] == label for top, (_, label) in zip(tops, images, strict=True))
    assert right >= 36
    assert all(len(top) == 4 and abs(sum(c["probability"] for c in top) - 1) < 1e-5 for top in tops)
    assert tops[0][0]["class"] == loaded.classes[tops[0][0]["index"]]


def test_preprocessing_matches_what_training_evaluated(job, dataset):
    loaded = load_model(job, "epoch-2.pt")
    stored = np.load(dataset / "test-images.npy")[:8]
    prepared = [preprocess(loaded, png(image)) for image in stored]
    from_files = logits(loaded, torch.stack([p.tensor for p in prepared]))
    rows = evaluate_split(loaded, dataset, "test", batch_size=8)[:8]
    assert [row["top"][0]["index"] for row in rows] == from_files.argmax(dim=1).tolist()
    assert np.array_equal(prepared[0].pixels, stored[0])
    assert prepared[0].seen.shape == (28, 28, 1) and prepared[0].seen.max() == 255 and prepared[0].seen.min() == 0


def test_a_colour_image_is_converted_for_a_grayscale_model_and_resized(job):
    loaded = load_model(job)
    colour = np.zeros((56, 70, 3), dtype=np.uint8)
    colour[26:30, :, :] = 220
    prepared = preprocess(loaded, png(colour))
    assert prepared.tensor.shape == (1, 28, 28) and prepared.pixels.shape == (28, 28, 1)
    assert classify(loaded, [png(colour)])[0][0]["class"] == "horizontal"


def test_a_model_still_training_uses_its_newest_snapshot_and_says_so(tmp_path, job):
    running = tmp_path / "running"
    shutil.copytree(job, running)
    (running / jobfiles.EVENTS).write_text("")
    loaded = load_model(running)
    assert loaded.snapshot.startswith("epoch-") or loaded.snapshot == jobfiles.LAST
    assert "still training" in loaded.note


@pytest.mark.parametrize("data, reason", [
    (b"this is not an image", "not an image"),
    (png(np.random.default_rng(0).integers(0, 256, (64, 64, 1), dtype=np.uint8))[:2000], "truncated"),
    (b"", "empty"),
])
def test_bad_images_are_refused_with_a_reason(job, data, reason):
    with pytest.raises(InferenceError, match=reason):
        preprocess(load_model(job), data)


def test_an_enormous_image_is_refused_before_it_is_decoded(job):
    out = io.BytesIO()
    Image.new("L", (12000, 12000)).save(out, format="PNG")
    with pytest.raises(InferenceError, match="decompression bomb"):
        preprocess(load_model(job), out.getvalue())


def test_a_missing_job_or_snapshot_is_not_found(tmp_path, job):
    with pytest.raises(ModelNotFound):
        load_model(tmp_path / "nothing")
    with pytest.raises(ModelNotFound, match="epoch-9.pt"):
        load_model(job, "epoch-9.pt")
    with pytest.raises(InferenceError, match="not the name of a snapshot"):
        load_model(job, "../config.json")


def test_a_snapshot_of_another_architecture_is_refused(tmp_path, job):
    other = tmp_path / "other"
    shutil.copytree(job, other)
    resnet = build({"source": "standard", "name": "resnet18"}, 1, 4, 28, 28)
    checkpoint.save(other / jobfiles.CHECKPOINTS / "foreign.pt", {"model": resnet.state_dict()})
    with pytest.raises(InferenceError, match="not for this network's architecture: missing conv1.bias.*shaped differently"):
        load_model(other, "foreign.pt")
    (other / jobfiles.CHECKPOINTS / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(InferenceError, match="not a PyTorch weights file"):
        load_model(other, "junk.pt")


def test_a_deleted_dataset_is_not_found(tmp_path, job):
    moved = tmp_path / "moved"
    shutil.copytree(job, moved)
    config = json.loads((moved / jobfiles.CONFIG).read_text())
    (moved / jobfiles.CONFIG).write_text(json.dumps({**config, "dataset_dir": str(tmp_path / "gone")}))
    with pytest.raises(ModelNotFound, match="dataset"):
        load_model(moved)
