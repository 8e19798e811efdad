"""Test-time augmentation: the logits of an image network averaged over
views of each image, weighted as airbench weights them (the training params'
``tta``):

- ``none``: the image alone;
- ``mirror``: ½ the image, ½ its mirror image (left-right);
- ``mirror_translate``: ½ the mirror pair of the image, ¼ each the mirror
  pair of the image shifted one pixel up-left and one pixel down-right
  (reflect-padded), six views in all.

Logits are averaged, not probabilities, as airbench does.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

LEVELS = ("none", "mirror", "mirror_translate")
Predictor = Callable[[nn.Module, Tensor], Tensor]


def plain(model: nn.Module, x: Tensor) -> Tensor:
    return model(x)


def mirror(model: nn.Module, x: Tensor) -> Tensor:
    return 0.5 * model(x) + 0.5 * model(x.flip(-1))


def shifted(x: Tensor) -> tuple[Tensor, Tensor]:
    """``x`` moved by one pixel up-left and down-right, reflected at the borders."""
    height, width = x.shape[-2:]
    padded = F.pad(x, (1, 1, 1, 1), mode="reflect")
    return padded[..., :height, :width], padded[..., 2:, 2:]


def mirror_translate(model: nn.Module, x: Tensor) -> Tensor:
    up_left, down_right = shifted(x)
    return 0.5 * mirror(model, x) + 0.25 * mirror(model, up_left) + 0.25 * mirror(model, down_right)


PREDICTORS: dict[str, Predictor] = {"none": plain, "mirror": mirror, "mirror_translate": mirror_translate}


def predictor(level: str) -> Predictor:
    if level not in PREDICTORS:
        raise ValueError(f"tta must be one of {', '.join(LEVELS)}, not {level!r}")
    return PREDICTORS[level]
