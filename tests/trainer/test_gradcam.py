"""Grad-CAM finds what decides the class: a small network trained to tell
noise from noise with a bright square looks at the square."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.inferfiles import make_square_dataset, png, square, trained_job
from trainer.inference import InferenceError, load_model, preprocess
from trainer.inference.gradcam import saliency

# LeNet with padded convolutions, so the last one's map lines up with the
# image (unpadded ones lose a border, and the upsampled map is off by it).
PADDED_LENET = """
- conv: {out: 20, kernel: 5, padding: 2}
- maxpool: {kernel: 2, stride: 2}
- conv: {out: 50, kernel: 5, padding: 2}
- relu: {}
- maxpool: {kernel: 2, stride: 2}
- flatten: {}
- linear: {out: 100}
- relu: {}
- linear: {out: classes}
"""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("squares")
    job = trained_job(folder / "job", make_square_dataset(folder / "dataset"), epochs=3, lr=0.05,
                      network={"source": "layers", "text": PADDED_LENET})
    return load_model(job)


def test_grad_cam_peaks_on_the_bright_square(loaded):
    rng = np.random.default_rng(11)
    for _ in range(8):
        image, (row, column) = square(True, 28, rng)
        found = saliency(loaded, preprocess(loaded, png(image)), loaded.classes.index("square"))
        assert found["class"] == "square"
        assert abs(found["peak"][0] - row) <= 4 and abs(found["peak"][1] - column) <= 4, (found["peak"], row, column)


def test_the_top_class_is_the_default_and_the_overlay_is_a_colour_png(loaded, tmp_path):
    image, _ = square(True, 28, np.random.default_rng(2))
    found = saliency(loaded, preprocess(loaded, png(image)))
    assert found["class"] == "square"
    (tmp_path / "overlay.png").write_bytes(found["png"])
    with Image.open(tmp_path / "overlay.png") as overlay:
        assert (overlay.mode, overlay.size) == ("RGB", (28, 28))
    with pytest.raises(InferenceError, match="not one of this model's 2"):
        saliency(loaded, preprocess(loaded, png(image)), 7)
