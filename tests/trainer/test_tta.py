"""Test-time augmentation (trainer.tta): the weighted mean of the views."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from trainer import tta


class Recorder(nn.Module):
    """A non-linear network that also records the views it was given."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(2, 3, kernel_size=3)
        self.views: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.views.append(x.clone())
        return torch.relu(self.conv(x)).amax(dim=(2, 3))


def images() -> torch.Tensor:
    return torch.rand((4, 2, 6, 7), generator=torch.Generator().manual_seed(1))


def test_mirror_translate_is_airbenchs_weighted_mean_of_six_views():
    model, x = Recorder(), images()
    logits = tta.predictor("mirror_translate")(model, x)
    padded = F.pad(x, (1, 1, 1, 1), mode="reflect")
    up_left, down_right = padded[..., :6, :7], padded[..., 2:, 2:]
    assert torch.equal(up_left[..., 1:, 1:], x[..., :-1, :-1]), "content moves down-right by one pixel"
    views = [x, x.flip(-1), up_left, up_left.flip(-1), down_right, down_right.flip(-1)]
    weights = [0.25, 0.25, 0.125, 0.125, 0.125, 0.125]
    expected = sum(w * model(v) for w, v in zip(weights, views, strict=True))
    assert torch.allclose(logits, expected, atol=1e-6)
    assert len(model.views) == 12  # six for the prediction, six for the expectation
    assert not torch.allclose(logits, model(x)), "the views change the answer"


def test_mirror_averages_the_image_and_its_mirror_image():
    model, x = Recorder(), images()
    assert torch.allclose(tta.predictor("mirror")(model, x), 0.5 * model(x) + 0.5 * model(x.flip(-1)))
    assert torch.equal(tta.predictor("none")(model, x), model(x))


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="tta must be one of"):
        tta.predictor("rotate")
