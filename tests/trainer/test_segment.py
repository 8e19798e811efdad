"""Segment one in the trainer (no web, no model server): a mask on the
stored image goes back to the image's own pixels exactly in every resize
mode; a trained U-Net's answer for a photo of another size lies over its
shapes; a model of another task is refused."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.detectionfiles import CPU
from tests.segmentationfiles import train_segmenter_once, trained_segmenter
from tests.trainfiles import make_dataset, train_config
from trainer import jobfiles
from trainer.imageio import RESIZE_MODES, place_labels, placement
from trainer.inference.errors import InferenceError
from trainer.inference.model import load_model
from trainer.inference.segment import back_to_image, segment
from trainer.segmentation.labels import IGNORE
from trainer.train import Run


@pytest.fixture(scope="module")
def segmenter(tmp_path_factory) -> Path:
    """A U-Net trained 8 epochs on the scenes (32×24, squashed from 64×48); its root."""
    return train_segmenter_once(tmp_path_factory.mktemp("segmenter"))


@pytest.mark.parametrize("mode", RESIZE_MODES)
@pytest.mark.parametrize("size, pad", [((16, 12), None), ((13, 9), None), ((10, 7), (16, 12))])
def test_a_stored_mask_goes_back_to_the_images_pixels_in_every_resize_mode(mode, size, pad):
    """Placed on a larger stored image and taken back, a mask is itself
    wherever its pixels were kept, and ``IGNORE`` where the resize cropped them."""
    rng = np.random.default_rng(1)
    mask = rng.integers(0, 5, size[::-1], dtype=np.uint8)
    where = placement(*size, 40, 30, mode, pad)
    back = back_to_image(place_labels(mask, where, IGNORE), where)
    assert back.shape == mask.shape
    kept = back != IGNORE
    assert np.array_equal(back[kept], mask[kept])
    if mode in ("squash", "fill"):
        assert kept.all(), "nothing of the image is cropped away"
    else:
        assert kept.mean() > 0.5


def test_a_trained_unet_segments_a_photo_in_its_own_pixels(segmenter):
    loaded = load_model(segmenter / "run")
    source = segmenter / "source"
    name = sorted((source / "images").iterdir())[0]
    truth = np.asarray(Image.open(source / "labels" / name.name))
    answer = segment(loaded, name.read_bytes())
    assert (answer["width"], answer["height"]) == (64, 48)
    mask = np.asarray(Image.open(io.BytesIO(base64.b64decode(answer["mask"]))))
    assert mask.shape == (48, 64)
    labelled = truth != IGNORE
    assert (mask[labelled] == truth[labelled]).mean() > 0.85
    assert [row["class"] for row in answer["classes"]][0] == "background"
    assert sum(row["pixels"] for row in answer["classes"]) == int((mask != IGNORE).sum()) == 64 * 48


def test_a_run_with_a_crop_marks_what_its_network_never_saw(segmenter, tmp_path):
    trained_segmenter(tmp_path / "cropped", segmenter / "build" / "dataset", epochs=1, crop=16)
    loaded = load_model(tmp_path / "cropped")
    answer = segment(loaded, sorted((segmenter / "source" / "images").iterdir())[0].read_bytes())
    mask = np.asarray(Image.open(io.BytesIO(base64.b64decode(answer["mask"]))))
    seen = mask != IGNORE
    rows, cols = np.flatnonzero(seen.any(axis=1)), np.flatnonzero(seen.any(axis=0))
    assert (rows[0], rows[-1] + 1, cols[0], cols[-1] + 1) == (8, 40, 16, 48)  # the centre 16×16 of 32×24, doubled


def test_a_classifier_is_refused_segment(tmp_path):
    dataset = make_dataset(tmp_path / "bars")
    config = {**train_config(dataset, epochs=1), "job_id": 1, "devices": ["cpu0"]}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / jobfiles.CONFIG).write_text(json.dumps(config))
    Run(config, tmp_path / "run", CPU).train()
    with pytest.raises(InferenceError, match="Segment is not available for Classification models."):
        segment(load_model(tmp_path / "run"), b"")
