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
from PIL import ExifTags, Image
from safetensors.torch import load as safetensors_load

from tests.inferfiles import CPU, bar_images, png, trained_job, untrained_job
from tests.trainfiles import make_dataset, train_config
from trainer import eventlog
from trainer.export import export_archive
from trainer.inference import InferenceError, classify, load_model, logits, preprocess
from trainer.pretrained import import_pretrained
from trainer.tasks.classification_export import FILES
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


def photo(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """A photo-like colour picture: smooth gradients, a few soft blobs, grain."""
    side = max(width, height)
    rows, cols = np.mgrid[0:height, 0:width] / side
    picture = np.stack([200 * rows, 150 * cols, 100 + 80 * np.sin(6 * rows * cols)], axis=2)
    for _ in range(4):
        y, x, radius = rng.uniform(0, height / side), rng.uniform(0, width / side), rng.uniform(0.05, 0.2)
        picture += rng.uniform(-120, 120, 3) * np.exp(-((rows - y) ** 2 + (cols - x) ** 2) / radius**2)[:, :, None]
    return np.clip(picture + rng.normal(0, 6, picture.shape), 0, 255).astype(np.uint8)


def turned_jpeg(path: Path, orientation: int) -> Path:
    """A 400×240 JPEG whose EXIF says to show it turned (6 or 8): upright it is 240×400."""
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = orientation
    Image.fromarray(photo(np.random.default_rng(orientation), 400, 240)).save(path, "JPEG", quality=90, exif=exif)
    return path


def colour_dataset(folder: Path, resize_mode: str) -> Path:
    """Five classes of 32×32 colour pictures, built with ``resize_mode``."""
    make_dataset(folder, {"train": 4, "val": 2}, size=32, channels=3, classes=("a", "b", "c", "d", "e"),
                 draw=lambda label, size, rng: photo(rng, size, size))
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "options": {"resize_mode": resize_mode}}))
    return folder


@pytest.mark.parametrize(("resize_mode", "crop", "mean", "orientation"), [
    ("squash", None, "image", 6), ("crop", 28, "pixel", 8), ("half_crop", 28, "image", 6), ("fill", None, "none", 8)])
def test_the_readmes_code_classifies_a_turned_jpeg_as_the_app_does(tmp_path, resize_mode, crop, mean, orientation):
    """The README's code, run on its own with onnxruntime, decodes a JPEG as the app does (drafted at the size
    the resize mode needs, turned upright by its EXIF orientation), prepares it the same way and prints the
    same top five with the same probabilities."""
    torch.manual_seed(0)
    dataset = colour_dataset(tmp_path / "dataset", resize_mode)
    loaded = load_model(untrained_job(tmp_path / "job", dataset, "lenet", crop=crop, mean=mean))
    with zipfile.ZipFile(export_archive(loaded, tmp_path / "model.zip")) as files:
        files.extractall(tmp_path / "archive")
    readme = (tmp_path / "archive" / "README.md").read_text()
    (tmp_path / "archive" / "classify.py").write_text(readme.split("```python\n")[1].split("```")[0])
    image = turned_jpeg(tmp_path / "photo.jpg", orientation)

    printed = subprocess.run([sys.executable, "classify.py", str(image)], cwd=tmp_path / "archive",
                             capture_output=True, text=True, check=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"}).stdout.strip().splitlines()
    rows = [line.rsplit(None, 1) for line in printed]
    app = classify(loaded, [image.read_bytes()])[0]
    assert [name for name, _ in rows] == [top["class"] for top in app]
    assert [float(p) for _, p in rows] == pytest.approx([top["probability"] for top in app], abs=1e-5)


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
    trained = [e["data"] for e in eventlog.read_all(lenet_job) if e["kind"] == "result"][-1]
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
