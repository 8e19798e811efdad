"""Model archives: the exported program and the ONNX file (run by
onnxruntime) predict what the app predicts; the README's example runs; an
archive or a plain state dict comes back as pretrained weights, checked
against its network, and fine-tunes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch
import torchvision
from safetensors.torch import load as safetensors_load

from tests.inferfiles import CPU, bar_images, png, trained_job, untrained_job
from tests.trainfiles import make_dataset, train_config
from trainer import events
from trainer.export import FILES, export_archive
from trainer.inference import InferenceError, classify, load_model, logits, preprocess
from trainer.pretrained import import_pretrained
from trainer.train import Run


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("bars") / "dataset")


@pytest.fixture(scope="module")
def lenet_job(tmp_path_factory, dataset) -> Path:
    return trained_job(tmp_path_factory.mktemp("lenet") / "job", dataset, epochs=1)


def check_round_trip(job: Path, folder: Path) -> None:
    loaded = load_model(job)
    archive = export_archive(loaded, folder / "model.zip")
    images = [image for image, _ in bar_images(12, seed=5)]
    x = torch.stack([preprocess(loaded, image).tensor for image in images])
    expected = logits(loaded, x)
    with zipfile.ZipFile(archive) as files:
        assert files.namelist() == list(FILES)
        files.extractall(folder / "unpacked")
    unpacked = folder / "unpacked"

    program = torch.export.load(unpacked / "model.pt2").module()
    from_program = program(x).detach()
    session = onnxruntime.InferenceSession(str(unpacked / "model.onnx"))
    from_onnx = torch.from_numpy(session.run(None, {"image": x.numpy()})[0])
    top1 = [top[0]["index"] for top in classify(loaded, images)]
    assert from_program.argmax(dim=1).tolist() == top1
    assert from_onnx.argmax(dim=1).tolist() == top1
    assert torch.allclose(from_program, expected, atol=1e-4, rtol=1e-4)
    assert torch.allclose(from_onnx, expected, atol=1e-3, rtol=1e-3)

    weights = safetensors_load((unpacked / "weights.safetensors").read_bytes())
    assert all(torch.equal(weights[k], v) for k, v in loaded.model.state_dict().items())
    info = json.loads((unpacked / "info.json").read_text())
    assert (info["channels"], info["height"], info["width"], info["resize_mode"], info["mean"]) == (1, 28, 28, "squash", "image")
    assert (unpacked / "labels.txt").read_text().splitlines() == loaded.classes
    assert np.load(unpacked / "mean.npy").shape == (28, 28, 1)


def test_a_trained_lenet_round_trips_through_the_program_and_onnxruntime(tmp_path, lenet_job):
    check_round_trip(lenet_job, tmp_path)


def test_a_resnet18_round_trips_through_the_program_and_onnxruntime(tmp_path, dataset):
    check_round_trip(untrained_job(tmp_path / "resnet", dataset, "resnet18"), tmp_path)


def test_the_readme_example_classifies_an_image_with_onnxruntime(tmp_path, lenet_job):
    loaded = load_model(lenet_job)
    with zipfile.ZipFile(export_archive(loaded, tmp_path / "model.zip")) as files:
        files.extractall(tmp_path)
    readme = (tmp_path / "README.md").read_text()
    snippet = readme.split("```python\n")[1].split("```")[0]
    assert len(snippet.strip().splitlines()) <= 10
    image, label = bar_images(1, seed=9)[0]
    (tmp_path / "image.png").write_bytes(image)
    (tmp_path / "example.py").write_text(snippet)
    printed = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, check=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"}).stdout.strip()
    assert printed == classify(loaded, [image])[0][0]["class"]


def test_an_archive_comes_back_as_pretrained_weights_and_fine_tunes(tmp_path, lenet_job, dataset):
    loaded = load_model(lenet_job)
    archive = export_archive(loaded, tmp_path / "model.zip")
    pretrained = import_pretrained(archive)
    assert pretrained.classes == loaded.classes and pretrained.network == loaded.network
    assert all(torch.equal(pretrained.weights[k], v) for k, v in loaded.model.state_dict().items())
    assert import_pretrained(archive.read_bytes()).classes == loaded.classes

    saved = pretrained.save(tmp_path / "pretrained.pt")
    config = {**train_config(dataset, epochs=1, lr=0.0, pretrained={"job": 1, "path": str(saved), "mode": "continue"}),
              "job_id": 3, "devices": ["cpu0"]}
    (tmp_path / "tuned").mkdir()
    result = Run(config, tmp_path / "tuned", CPU).train()
    trained = [e["data"] for e in events.read_all(lenet_job) if e["kind"] == "result"][-1]
    assert result["final"]["val_loss"] == pytest.approx(trained["final"]["val_loss"], rel=1e-5), \
        "the pretrained weights, unchanged at a zero learning rate"


def test_torchvisions_resnet18_state_dict_is_accepted_for_the_standard_resnet18(tmp_path):
    state = torchvision.models.resnet18(weights=None).state_dict()
    torch.save(state, tmp_path / "resnet18.pth")
    pretrained = import_pretrained(tmp_path / "resnet18.pth", "resnet18")
    assert len(pretrained.classes) == 1000 and pretrained.channels == 3
    assert torch.equal(pretrained.weights["fc.weight"], state["fc.weight"])
    wrapped = {"state_dict": {f"module.{k}": v for k, v in state.items()}}
    assert import_pretrained(wrapped, "resnet18", [str(i) for i in range(1000)]).classes[5] == "5"


def test_mismatched_or_unsafe_weights_are_refused_with_what_differs(tmp_path):
    resnet34 = torchvision.models.resnet34(weights=None, num_classes=10).state_dict()
    with pytest.raises(InferenceError, match="not for this network's architecture: unknown layer1.2.conv1.weight"):
        import_pretrained(resnet34, "resnet18")
    with pytest.raises(InferenceError, match="score 10 classes, not the 3 given"):
        import_pretrained(resnet34, "resnet34", ["a", "b", "c"])

    class Payload:
        def __reduce__(self):
            return (print, ("ran code",))

    out = io.BytesIO()
    torch.save({"model": Payload()}, out)
    with pytest.raises(InferenceError, match="can be read safely"):
        import_pretrained(out.getvalue(), "resnet18")
    with pytest.raises(InferenceError, match="Unknown standard network"):
        import_pretrained(resnet34, "resnet99")
    with pytest.raises(InferenceError, match="not a PyTorch weights file"):
        import_pretrained(png(np.zeros((4, 4, 1), np.uint8)), "resnet18")
