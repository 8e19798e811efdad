"""Detect one for instance segmentation: each box's object comes back as a
mask in the pixels of the image the user gave (every resize mode), the
better-scored object on top where two overlap, with its pixels counted;
and a trained Mask R-CNN answers an unseen image with its objects.

Where the masks land is checked with a network that cannot miss (as
``test_detect``'s oracle): it masks its input's magenta pixels; it sees the
image after the real decode, placement and normalisation, and its mask goes
back through the real inverse."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.instancefiles import one_shape, train_instances_once
from tests.trainer.test_detect import CASES, loaded, picture
from trainer.imageio import RESIZE_MODES
from trainer.inference import load_model
from trainer.inference.detect import SCORE_FLOOR, detect
from trainer.tasks import instance_segmentation


class MaskOracle(torch.nn.Module):
    """Masks its input's magenta pixels as a Cyclist scoring 0.9; adds a
    Car scoring 0.6 whose mask is the input's left half (under the first
    where they overlap), and one scoring under the floor."""

    def forward(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        answers = []
        for x in images:
            red, green, blue = x
            magenta = ((red > 0.7) & (green < 0.3) & (blue > 0.7)).float()
            left = torch.zeros_like(magenta)
            left[:, : x.shape[2] // 2] = 1
            rows, columns = torch.nonzero(magenta, as_tuple=True)
            box = [columns.min(), rows.min(), columns.max() + 1, rows.max() + 1]
            half = [0, 0, x.shape[2] // 2, x.shape[1]]
            answers.append({"boxes": torch.tensor([half, box, [0, 0, 4, 4]], dtype=torch.float32),
                            "scores": torch.tensor([0.6, 0.9, SCORE_FLOOR / 2]), "labels": torch.tensor([1, 2, 1]),
                            "masks": torch.stack([left, magenta, left])[:, None]})
        return answers


def objects_of(answer: dict) -> np.ndarray:
    image = Image.open(io.BytesIO(base64.b64decode(answer["instances"])))
    assert image.mode == "L" and image.size == (answer["width"], answer["height"])
    return np.asarray(image)


@pytest.mark.parametrize("mode", RESIZE_MODES)
@pytest.mark.parametrize("image, box", CASES)
def test_each_objects_mask_comes_back_over_it_in_the_images_pixels(mode, image, box):
    answer = detect(loaded(MaskOracle(), mode, task=instance_segmentation.TASK), picture(*image, box))
    assert [(b["class"], b["score"]) for b in answer["boxes"]] == [("Cyclist", pytest.approx(0.9)),
                                                                   ("Car", pytest.approx(0.6))]
    objects = objects_of(answer)
    x1, y1, x2, y2 = box
    truth = np.zeros_like(objects, dtype=bool)
    truth[y1:y2, x1:x2] = True
    found = objects == 1
    # Two of the model's pixels of tolerance at the edges, in the image's pixels (the resize blends them).
    margin = int(np.ceil(2 * max(image[0] / 64, image[1] / 48)))
    inner = np.zeros_like(truth)
    inner[y1 + margin:y2 - margin, x1 + margin:x2 - margin] = True
    outer = np.zeros_like(truth)
    outer[max(0, y1 - margin):y2 + margin, max(0, x1 - margin):x2 + margin] = True
    assert found[inner].all() and not found[~outer].any(), (mode, image)
    assert answer["boxes"][0]["pixels"] == int(found.sum())
    car = objects == 2  # the left half of what the model saw, the Cyclist over it
    assert car.any() and not (car & found).any() and answer["boxes"][1]["pixels"] == int(car.sum())
    assert set(np.unique(objects).tolist()) <= {0, 1, 2}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    """A Mask R-CNN trained for one epoch on 24 one-shape scenes, on one thread."""
    return train_instances_once(tmp_path_factory.mktemp("instances")) / "run"


def test_a_trained_mask_rcnn_answers_an_unseen_image_with_each_objects_mask(model_folder):
    model = load_model(model_folder)
    pixels, _ = one_shape(99, (40, 40))
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    answer = detect(model, out.getvalue())
    assert (answer["width"], answer["height"]) == (40, 40) and answer["boxes"]
    objects = objects_of(answer)
    assert objects.max() <= len(answer["boxes"])
    assert [box["pixels"] for box in answer["boxes"]] == [int((objects == n).sum())
                                                          for n in range(1, len(answer["boxes"]) + 1)]
    assert all(box["class"] in ("disc", "box") and box["score"] >= SCORE_FLOOR for box in answer["boxes"])
