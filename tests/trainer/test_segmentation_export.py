"""Semantic segmentation's model archive, made by the export job's own code
from U-Nets trained here for a few seconds on the scenes: its files, its
ONNX file and its program giving the app's logits at any batch size, and
its ``segment.py`` and the README's lines, run on their own beside the
archive's files, giving a photo of another size the mask the app's Segment
one gives it, pixel for pixel: squashed colour images, a run's crop, and
grayscale images filled (padded with noise) to the dataset's size."""

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
from tests.segmentationfiles import CLASSES, built_scenes, png, scene, trained_segmenter
from trainer.inference import load_model
from trainer.inference.segment import segment
from trainer.jobfiles import MANIFEST, MODEL_ARCHIVE
from trainer.segmentation.labels import IGNORE, parse_colour_map
from trainer.tasks.segmentation_export import FILES, PREPARE, SCRIPT

EPOCHS = 2


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def scenes(tmp_path_factory) -> Path:
    """32 scenes built at 32×24 (squashed from 64×48), colour; the built dataset."""
    return built_scenes(tmp_path_factory.mktemp("scenes"), count=32)


def exported_run(root: Path, dataset: Path, **overrides) -> Path:
    """A U-Net trained ``EPOCHS`` on ``dataset`` in ``root/run`` and its export job's folder, ``root/export``."""
    trained_segmenter(root / "run", dataset, epochs=EPOCHS, val_interval=float(EPOCHS),
                      snapshot_interval=float(EPOCHS), **overrides)
    return exported(root / "run", root / "export")


@pytest.fixture(scope="module")
def squashed(tmp_path_factory, scenes) -> Path:
    return exported_run(tmp_path_factory.mktemp("squashed"), scenes)


@pytest.fixture(scope="module")
def cropped(tmp_path_factory, scenes) -> Path:
    return exported_run(tmp_path_factory.mktemp("cropped"), scenes, crop=16)


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Path:
    """Grayscale scenes filled to 32×24 (their noise border ignored), a mean image subtracted."""
    root = tmp_path_factory.mktemp("filled")
    dataset = built_scenes(root / "data", count=32, channels=1, resize_mode="fill")
    return exported_run(root, dataset, mean="image")


def model_dir(export: Path) -> Path:
    return Path(json.loads((export / "config.json").read_text())["model_dir"])


def test_the_archive_holds_the_weights_the_preprocessing_the_labels_and_the_colours(squashed, tmp_path):
    result = [json.loads(line)["data"] for line in (squashed / "events.jsonl").read_text().splitlines()
              if json.loads(line)["kind"] == "result"][-1]
    assert result["files"] == list(FILES)
    with zipfile.ZipFile(squashed / MODEL_ARCHIVE) as archive:
        assert archive.namelist() == list(FILES)
    folder = unpacked(squashed, tmp_path)
    loaded = load_model(model_dir(squashed))
    weights = safetensors_load((folder / "weights.safetensors").read_bytes())
    assert all(torch.equal(weights[k], v) for k, v in loaded.model.state_dict().items())
    info = json.loads((folder / "info.json").read_text())
    assert info["task"] == "segmentation" and info["network"]["name"] == "unet" and info["ignore"] == IGNORE
    assert (info["image_width"], info["image_height"], info["width"], info["height"], info["resize_mode"],
            info["pil_mode"], info["pad_width"]) == (32, 24, 32, 24, "squash", "RGB", None)
    assert (folder / "labels.txt").read_text().splitlines() == list(CLASSES)
    drawn = json.loads((loaded.dataset_dir / MANIFEST).read_text())["labelling"]["colours"][:len(CLASSES)]
    assert drawn[1] == [128, 0, 0], "the palette PNGs' colours, VOC's"
    lines = parse_colour_map((folder / "colours.txt").read_text())
    assert [(list(line.colour), line.name) for line in lines] == list(zip(drawn, CLASSES, strict=True)), \
        "the import's own format"
    assert info["colours"] == drawn
    assert (folder / "segment.py").read_bytes() == SCRIPT.read_bytes()
    assert (folder / "prepare.py").read_bytes() == PREPARE.read_bytes()
    readme = (folder / "README.md").read_text()
    assert "resize to 32×24 in the\n`squash` mode" in readme and "N×3×24×32" in readme


@pytest.mark.parametrize("which", ["squashed", "cropped"])
def test_the_onnx_file_and_the_program_give_the_apps_logits_at_any_batch_size(request, which):
    export = request.getfixturevalue(which)
    loaded = load_model(model_dir(export))
    with zipfile.ZipFile(export / MODEL_ARCHIVE) as archive:
        session = onnxruntime.InferenceSession(archive.read("model.onnx"))
        program = torch.export.load(io.BytesIO(archive.read("model.pt2"))).module()
    height, width = loaded.input_size
    for batch in (1, 3):
        x = torch.rand(batch, 3, height, width, generator=torch.Generator().manual_seed(batch)) - 0.5
        with torch.no_grad():
            expected = loaded.model(x)
            assert torch.allclose(program(x), expected, atol=1e-4)
        (logits,) = session.run(None, {"image": x.numpy()})
        assert logits.shape == (batch, len(CLASSES), height, width)
        assert np.allclose(logits, expected.numpy(), atol=1e-4)


def apps_mask(export: Path, photo: Path) -> np.ndarray:
    answer = segment(load_model(model_dir(export)), photo.read_bytes())
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(answer["mask"]))))


@pytest.mark.parametrize(("which", "size"), [("squashed", (80, 60)), ("cropped", (48, 40)), ("filled", (70, 40))])
def test_segment_py_and_the_readmes_lines_give_a_photo_the_apps_mask(request, tmp_path, which, size):
    export = request.getfixturevalue(which)
    folder = unpacked(export, tmp_path / "archive")
    photo = tmp_path / "photo.png"
    photo.write_bytes(png(scene(77, size)[0]))
    expected = apps_mask(export, photo)
    assert expected.shape == size[::-1]

    printed = run_in(folder, "segment.py", str(photo), str(tmp_path / "mask.png"))
    mask = np.asarray(Image.open(tmp_path / "mask.png"))
    assert mask.shape == expected.shape and mask.dtype == np.uint8
    assert np.array_equal(mask == IGNORE, expected == IGNORE), "the pixels the network never saw"
    assert (mask == expected).mean() >= 0.999, "float rounding may move a tie, no more"
    counts = {name: int(pixels) for name, pixels in (line.split("\t") for line in printed)}
    assert counts == {CLASSES[c]: int((mask == c).sum()) for c in range(len(CLASSES)) if (mask == c).any()}
    if which == "cropped":
        assert (expected == IGNORE).any(), "the crop hid a border"

    readme = (folder / "README.md").read_text()
    code = readme.split("```python\n")[1].split("```")[0]
    (folder / "lines.py").write_text(code.replace('"photo.jpg"', repr(str(photo))))
    lines = dict(line.rsplit(" ", 1) for line in run_in(folder, "lines.py"))
    assert {name: int(pixels) for name, pixels in lines.items()} == {
        name: int((mask == c).sum()) for c, name in enumerate(CLASSES)}


def test_torchvisions_segmentation_networks_export_through_the_same_path():
    """LR-ASPP MobileNetV3 (the smallest of torchvision's four; all four
    were measured the same way, docs/inference.md) untrained, through the
    archive's program and ONNX exporter: onnxruntime gives its logits."""
    from types import SimpleNamespace

    from trainer.tasks.classification_export import onnx_bytes, program
    from trainer.tasks.segmentation_training import TORCHVISION, Logits

    model = Logits(TORCHVISION["lraspp_mobilenet_v3_large"](weights=None, weights_backbone=None, num_classes=4,
                                                            aux_loss=False)).eval()
    loaded = SimpleNamespace(model=model, channels=3, input_size=(40, 56), device=torch.device("cpu"))
    session = onnxruntime.InferenceSession(onnx_bytes(program(loaded)))
    x = torch.rand(3, 3, 40, 56) - 0.5
    with torch.no_grad():
        expected = model(x).numpy()
    (logits,) = session.run(None, {"image": x.numpy()})
    assert logits.shape == (3, 4, 40, 56) and np.allclose(logits, expected, atol=1e-4)
