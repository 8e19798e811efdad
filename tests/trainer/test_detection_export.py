"""Detection's model archive: a detector trained here on coloured
rectangles, exported by the export job's own code. Its ONNX file, run by
onnxruntime on images of other sizes than it was trained at, finds what the
app's model finds; the archive's ``detect.py`` and the README's lines, run on
their own beside the archive's files, find in a photo what the app finds in
it as its dataset build prepares it, the boxes moved back to the photo."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch
from PIL import Image
from safetensors.torch import load as safetensors_load

from tests.detectionfiles import COLOURS, built_rectangles, rectangle_image, train_detector_once, trained_detector
from tests.exportfiles import exported, run_in, unpacked
from trainer import eventkinds, eventlog
from trainer.detection.boxgeometry import move_boxes
from trainer.imageio import load_image, placement, resize
from trainer.inference import InferenceError, load_model
from trainer.inference.preprocess import FILL_SEED
from trainer.jobfiles import MODEL_ARCHIVE
from trainer.pretrained import import_pretrained
from trainer.tasks.detection_export import FILES, PREPARE, SCRIPT

# Detections scoring within this of the floor may be missing on one side:
# a score a hair under the floor is dropped.
MARGIN = 1e-3


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One thread: the detectors' small convolutions run faster so than
    fighting over a busy machine's cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def detector(tmp_path_factory) -> Path:
    """A Faster R-CNN (MobileNetV3) trained on 32×32 rectangles, squashed, the mean pixel subtracted."""
    return train_detector_once(tmp_path_factory.mktemp("detector")) / "run"


@pytest.fixture(scope="module")
def export(tmp_path_factory, detector) -> Path:
    return exported(detector, tmp_path_factory.mktemp("export") / "job")


@pytest.fixture(scope="module")
def padded(tmp_path_factory) -> Path:
    """A detector of a build that pads to 48×40 then resizes to 40×36 in half_crop, the mean image
    subtracted, trained one epoch: its export job's folder."""
    root = tmp_path_factory.mktemp("padded")
    dataset = built_rectangles(root, count=32, width=40, height=36, resize_mode="half_crop",
                               placing={"pad_width": 48, "pad_height": 40, "min_box_size": 0})
    trained_detector(root / "job", dataset, epochs=1, mean="image")
    return exported(root / "job", root / "export")


def picture(name: str, width: int, height: int, seed: int) -> np.ndarray:
    """A rectangles picture (uint8 H×W×3) of another size than the training images."""
    png, _ = rectangle_image(name, np.random.default_rng(seed), size=max(width, height))
    return np.asarray(load_image(png, 3).resize((width, height), Image.BILINEAR))


def detections(model: torch.nn.Module, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The app's model on one input: boxes, scores and labels (class indices)."""
    with torch.no_grad():
        found = model([x])[0]
    return found["boxes"].numpy(), found["scores"].numpy(), found["labels"].numpy() - 1


def assert_same(expected, found, floor: float) -> int:
    """Every detection scoring clearly over ``floor`` on either side has its
    own on the other: the same label, the box within 1e-2 pixels (or 1e-4 of
    it), the score within 1e-3. Returns how many were matched."""
    left = list(range(len(found[1])))
    matched = 0
    for box, score, label in zip(*expected, strict=True):
        if score < floor + MARGIN:
            continue
        same = [j for j in left if found[2][j] == label and abs(found[1][j] - score) <= 1e-3
                and np.allclose(found[0][j], box, rtol=1e-4, atol=1e-2)]
        assert same, f"no match for {label} {score} {box} in {found}"
        left.remove(same[0])
        matched += 1
    assert not [j for j in left if found[1][j] >= floor + MARGIN], f"left over: {[found[k][left] for k in range(3)]}"
    return matched


def test_the_export_job_writes_every_file_of_a_detectors_archive(export, detector, tmp_path):
    result = [event["data"] for event in eventlog.read_all(export) if event["kind"] == eventkinds.RESULT][-1]
    assert result["files"] == list(FILES) and result["classes"] == len(COLOURS)
    with zipfile.ZipFile(export / MODEL_ARCHIVE) as archive:
        assert archive.namelist() == list(FILES), "no model.pt2: torch.export cannot capture the detector"
    folder = unpacked(export, tmp_path)
    loaded = load_model(detector)
    weights = safetensors_load((folder / "weights.safetensors").read_bytes())
    assert weights.keys() == loaded.model.state_dict().keys()
    assert all(torch.equal(weights[k], v) for k, v in loaded.model.state_dict().items())
    info = json.loads((folder / "info.json").read_text())
    assert info["task"] == "detection" and info["network"]["name"] == "fasterrcnn_mobilenet_v3_large_fpn"
    assert (info["image_width"], info["image_height"], info["resize_mode"], info["pad_width"], info["mean"]) == (
        32, 32, "squash", None, "pixel")
    assert info["score_floor"] == 0.05 and info["outputs"] == ["boxes", "scores", "labels"]
    assert info["model.pt2"].startswith("not included: torch.export cannot capture")
    assert (folder / "labels.txt").read_text().splitlines() == loaded.classes == list(COLOURS)
    assert np.allclose(np.load(folder / "mean.npy"), loaded.normalizer.mean.numpy().reshape(1, 1, 3) * 255)
    assert (folder / "detect.py").read_bytes() == SCRIPT.read_bytes()
    assert (folder / "prepare.py").read_bytes() == PREPARE.read_bytes()
    readme = (folder / "README.md").read_text()
    assert "There is no `model.pt2`" in readme and "resized to 32×32 in the `squash` mode" in readme


def test_the_onnx_file_finds_what_the_app_finds_in_images_of_other_sizes(export, detector):
    loaded = load_model(detector)
    with zipfile.ZipFile(export / MODEL_ARCHIVE) as archive:
        session = onnxruntime.InferenceSession(archive.read("model.onnx"))
        floor = json.loads(archive.read("info.json"))["score_floor"]
    matched = 0
    for seed, (width, height) in enumerate([(48, 48), (64, 40), (24, 36), (90, 60)]):
        pixels = picture(list(COLOURS)[seed % 2], width, height, seed)
        x = loaded.normalizer(torch.from_numpy(pixels.copy())[None])[0]
        expected = detections(loaded.model, x)
        boxes, scores, labels = session.run(None, {"image": x.numpy()})
        assert boxes.shape == (len(scores), 4) and labels.dtype == np.int64
        assert boxes[:, 2].max(initial=0) <= width + 1e-3 and boxes[:, 3].max(initial=0) <= height + 1e-3, \
            "in the input's pixels"
        matched += assert_same(expected, (boxes, scores, labels), floor)
    assert matched, "something was detected"


def photo_detections(loaded, photo: Path, floor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the app's model finds in ``photo`` prepared as the dataset build prepares an image (its resize
    mode and padding), boxes in the prepared image's pixels and clipped to where the photo lies in it."""
    image = load_image(photo, 3)
    height, width = loaded.image_size
    pixels = resize(image, width, height, loaded.resize_mode, np.random.default_rng(FILL_SEED), loaded.pad_to)
    boxes, scores, labels = detections(loaded.model, loaded.normalizer(torch.from_numpy(pixels.copy())[None])[0])
    where = placement(image.width, image.height, width, height, loaded.resize_mode, loaded.pad_to)
    (region,), _ = move_boxes(np.array([[0, 0, image.width, image.height]]), where)
    kept = scores >= floor
    return np.clip(boxes[kept], region[:2].tolist() * 2, region[2:].tolist() * 2), scores[kept], labels[kept]


@pytest.mark.parametrize(("build", "size"), [("squash", (56, 44)), ("padded", (44, 34))])
def test_detect_py_and_the_readmes_lines_find_what_the_app_finds_in_a_photo(request, tmp_path, build, size):
    """The archive's files alone in a folder: ``detect.py`` prints the
    detections with the boxes in the photo's pixels, which the build's own
    geometry moves back onto the app's boxes of the prepared image."""
    export = request.getfixturevalue("export" if build == "squash" else "padded")
    model_dir = Path(json.loads((export / "config.json").read_text())["model_dir"])
    loaded = load_model(model_dir)
    folder = unpacked(export, tmp_path / "archive")
    floor = json.loads((folder / "info.json").read_text())["score_floor"]
    photo = tmp_path / "photo.png"
    Image.fromarray(picture("Car", *size, seed=11)).save(photo)

    rows = [line.split("\t") for line in run_in(folder, "detect.py", str(photo), str(floor))]
    names = (folder / "labels.txt").read_text().splitlines()
    in_photo = np.array([[float(value) for value in row[2:]] for row in rows]).reshape(-1, 4)
    where = placement(*size, loaded.image_size[1], loaded.image_size[0], loaded.resize_mode, loaded.pad_to)
    printed = (move_boxes(in_photo, where)[0], np.array([float(row[1]) for row in rows]),
               np.array([names.index(row[0]) for row in rows]))
    assert assert_same(photo_detections(loaded, photo, floor), printed, floor) == len(rows) > 0

    readme = (folder / "README.md").read_text()
    code = readme.split("```python\n")[1].split("```")[0]
    (folder / "lines.py").write_text(code.replace('"photo.jpg"', repr(str(photo))).replace("0.5", repr(floor)))
    lines = [line.split(" ", 2) for line in run_in(folder, "lines.py")]
    assert [name for name, _, _ in lines] == [row[0] for row in rows]
    assert [float(score) for _, score, _ in lines] == pytest.approx([float(row[1]) for row in rows], abs=1e-3)


def test_a_detectors_archive_is_refused_as_pretrained_weights_with_the_reason(export):
    with pytest.raises(InferenceError, match="The archive holds a model of object detection: Starting a new model "
                                             "from its weights is not available for Object detection models."):
        import_pretrained(export / MODEL_ARCHIVE)


def flat_pixels(image: torch.Tensor) -> int:
    """Pixels equal to their lower-right neighbour in every channel: many
    inside a rectangle of one colour, none in noise."""
    return int(((image[:, 1:, 1:] - image[:, :-1, :-1]).abs().sum(0) < 1e-6).sum())


class FlatSpots(torch.nn.Module):
    """Stands in for a trained detector that finds nothing in noise: a box
    for each flat pixel of its image."""

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        count = flat_pixels(image)
        return torch.zeros(count, 4), torch.ones(count), torch.zeros(count, dtype=torch.long)


def test_the_trace_example_is_an_image_the_detector_finds_something_in(detector):
    """The tracer keeps only the branches its example takes: a trained
    detector that found nothing in the noise example gave a graph that
    failed in onnxruntime on every photo (see ``trace_example``)."""
    from trainer.inference.model import load_model
    from trainer.tasks.detection_export import trace_example

    loaded = load_model(detector)
    example = trace_example(loaded, FlatSpots())
    assert example.shape == (3, *loaded.input_size)
    assert flat_pixels(example) > 0  # a prepared training image: the noise has no flat pixel
