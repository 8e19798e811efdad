"""Detect one on the trainer side: boxes come back in the pixels of the
image the user gave, whatever the dataset build did to its images (each
resize mode, padding, a JPEG draft decode), and a trained detector answers
an unseen image with boxes of its classes.

A detector trained here for a minute on one core does not find the
rectangles yet (``test_detection_training``: an mAP@0.5 near 0.01), so
where the boxes land is checked with a detector that cannot miss: an
oracle network that boxes the magenta pixels of its input. It sees the
image after the real decode, placement and normalisation, and its box goes
back through the real inverse; only the network is stood in for."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.detectionfiles import COLOURS, SIZE, built_rectangles, rectangle_image, trained_detector
from trainer.data import Normalizer
from trainer.imageio import RESIZE_MODES
from trainer.inference import InferenceError, Loaded, load_model
from trainer.inference.detect import SCORE_FLOOR, detect
from trainer.tasks import classification, detection

MAGENTA = (255, 0, 255)
CLASSES = ["Car", "Cyclist"]


class Oracle(torch.nn.Module):
    """A detector that boxes its input's magenta pixels (those whose four
    neighbours are magenta too, so that no lone pixel of fill noise counts)
    as a Cyclist scoring 0.9, and adds a box scoring under the floor."""

    def forward(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        answers = []
        for x in images:
            red, green, blue = x
            mask = (red > 0.7) & (green < 0.3) & (blue > 0.7)
            inner = torch.zeros_like(mask)
            inner[1:-1, 1:-1] = mask[1:-1, 1:-1] & mask[:-2, 1:-1] & mask[2:, 1:-1] & mask[1:-1, :-2] & mask[1:-1, 2:]
            rows, columns = torch.nonzero(inner, as_tuple=True)
            box = [columns.min() - 1, rows.min() - 1, columns.max() + 2, rows.max() + 2]
            answers.append({"boxes": torch.tensor([box, [0, 0, 4, 4]], dtype=torch.float32),
                            "scores": torch.tensor([0.9, SCORE_FLOOR / 2]), "labels": torch.tensor([2, 1])})
        return answers


def loaded(model: torch.nn.Module, mode: str, pad_to: tuple[int, int] | None = None, task=detection.TASK) -> Loaded:
    """A model as ``load_model`` gives one, for 64×48 colour images, no mean."""
    size = (48, 64)
    return Loaded(model=model, network={}, classes=CLASSES, channels=3, image_size=size, input_size=size,
                  resize_mode=mode, pad_to=pad_to, normalizer=Normalizer("none", None), snapshot="best.pt",
                  note=None, device=torch.device("cpu"), task=task, dataset_dir=Path("unused"))


def picture(width: int, height: int, box: tuple[int, int, int, int], form: str = "PNG") -> bytes:
    pixels = np.full((height, width, 3), 90, dtype=np.uint8)
    x1, y1, x2, y2 = box
    pixels[y1:y2, x1:x2] = MAGENTA
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=form, quality=95)
    return out.getvalue()


def found(answer: dict) -> np.ndarray:
    assert [(b["index"], b["class"], b["score"]) for b in answer["boxes"]] == [(1, "Cyclist", pytest.approx(0.9))]
    box = answer["boxes"][0]
    return np.array([box["x1"], box["y1"], box["x2"], box["y2"]])


# Images of other shapes than the model's 64×48, the box well inside the
# part every mode keeps; the tolerance is two of the model's pixels in the
# image's pixels (the resize blends the rectangle's edges).
CASES = [((320, 200), (130, 60, 210, 150)), ((90, 160), (20, 50, 70, 110)), ((40, 40), (12, 8, 30, 31))]


@pytest.mark.parametrize("mode", RESIZE_MODES)
@pytest.mark.parametrize("image, box", CASES)
def test_the_box_comes_back_in_the_images_pixels_for_every_resize_mode(mode, image, box):
    answer = detect(loaded(Oracle(), mode), picture(*image, box))
    assert (answer["width"], answer["height"]) == image
    scale = max(image[0] / 64, image[1] / 48)
    assert found(answer) == pytest.approx(np.array(box), abs=2 * scale)


@pytest.mark.parametrize("mode", RESIZE_MODES)
def test_with_the_builds_padding_the_box_still_comes_back_where_it_was(mode):
    """The image is padded at the right and bottom to 400×300 before the resize, as DIGITS padded."""
    box = (130, 60, 210, 150)
    answer = detect(loaded(Oracle(), mode, pad_to=(400, 300)), picture(320, 200, box))
    assert (answer["width"], answer["height"]) == (320, 200)
    assert found(answer) == pytest.approx(np.array(box), abs=2 * 400 / 64)


def test_a_large_jpeg_decoded_at_an_eighth_comes_back_at_full_size():
    box = (800, 300, 1400, 900)
    answer = detect(loaded(Oracle(), "squash"), picture(2000, 1200, box, "JPEG"))
    assert (answer["width"], answer["height"]) == (2000, 1200)
    assert found(answer) == pytest.approx(np.array(box), abs=2 * 2000 / 64)


def test_an_image_larger_than_the_padding_is_refused_with_a_message():
    with pytest.raises(InferenceError, match="The file cannot be used as an image: 320×200 is larger than the "
                                             "padding size 100×100"):
        detect(loaded(Oracle(), "squash", pad_to=(100, 100)), picture(320, 200, (1, 1, 50, 50)))


def test_a_classifier_is_refused():
    with pytest.raises(InferenceError, match="^Detect is not available for Classification models.$"):
        detect(loaded(Oracle(), "squash", task=classification.TASK), picture(64, 48, (1, 1, 20, 20)))


@pytest.fixture(scope="module")
def detector(tmp_path_factory) -> Path:
    """A Faster R-CNN trained for one epoch on 24 rectangles, on one thread."""
    root = tmp_path_factory.mktemp("detector")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trained_detector(root / "run", built_rectangles(root, count=24), epochs=1)
    finally:
        torch.set_num_threads(threads)
    return root / "run"


def test_a_trained_detector_answers_an_unseen_image_with_boxes_of_its_classes_on_the_image(detector):
    model = load_model(detector)
    image, _ = rectangle_image("Car", np.random.default_rng(99))
    answer = detect(model, image)
    assert (answer["width"], answer["height"]) == (SIZE, SIZE)
    scores = [box["score"] for box in answer["boxes"]]
    assert scores == sorted(scores, reverse=True) and all(score >= SCORE_FLOOR for score in scores)
    for box in answer["boxes"]:
        assert box["class"] == list(COLOURS)[box["index"]]
        assert 0 <= box["x1"] < box["x2"] <= SIZE and 0 <= box["y1"] < box["y2"] <= SIZE
