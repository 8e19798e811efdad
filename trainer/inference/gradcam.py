"""Where the network looked: Grad-CAM (Selvaraju et al. 2017,
https://arxiv.org/abs/1610.02391) on the last convolution.

Written here with one forward hook and one tensor hook (the method is a
weighted sum of feature maps) rather than taken from ``grad-cam`` or
``captum``: neither adds what our networks need, and both bring their own
dependencies and model wrappers for thirty lines of arithmetic.

The class's score is back-propagated to the last ``Conv2d`` to run; each of
its channels is weighted by the mean of its gradient, the weighted sum is
rectified, upsampled to the input and scaled to [0, 1]. The upsampling
assumes the map covers the whole image, which padded convolutions keep
true; after unpadded ones (DIGITS' LeNet) the map lacks the lost border
and its peaks sit a few pixels towards the image's edges."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import pictures
from .errors import InferenceError
from .model import Loaded
from .preprocess import Prepared


def last_convolution(model: nn.Module) -> nn.Module:
    found = [module for module in model.modules() if isinstance(module, nn.Conv2d)]
    if not found:
        raise InferenceError("The network has no convolution to look at.")
    return found[-1]


def grad_cam(loaded: Loaded, x: torch.Tensor, class_index: int | None = None) -> tuple[np.ndarray, int]:
    """The heat map (float h×w in [0, 1]) of one input ``x`` (C×h×w) for
    ``class_index`` (default: the top class), and that class."""
    model, captured = loaded.model, {}

    def keep(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        if "activation" not in captured:  # a module run twice: its first run
            captured["activation"] = output
            output.register_hook(lambda grad: captured.__setitem__("gradient", grad))

    handle = last_convolution(model).register_forward_hook(keep)
    try:
        with torch.enable_grad():
            scores = model(x[None].to(loaded.device))
            index = int(scores[0].argmax()) if class_index is None else class_index
            if not 0 <= index < scores.shape[1]:
                raise InferenceError(f"The class {index} is not one of this model's {scores.shape[1]}.")
            scores[0, index].backward()
    finally:
        handle.remove()
        model.zero_grad(set_to_none=True)
    activation, gradient = captured["activation"].detach(), captured["gradient"]
    cam = F.relu((gradient.mean(dim=(2, 3), keepdim=True) * activation).sum(dim=1, keepdim=True))
    cam = F.interpolate(cam, size=x.shape[1:], mode="bilinear", align_corners=False)[0, 0]
    cam = cam / cam.max().clamp_min(1e-12)
    return cam.cpu().numpy(), index


def saliency(loaded: Loaded, prepared: Prepared, class_index: int | None = None) -> dict[str, Any]:
    """``{"index", "class", "peak": [row, column], "png"}``: the Grad-CAM of
    ``prepared`` overlaid on the image as the network saw it."""
    heat, index = grad_cam(loaded, prepared.tensor, class_index)
    peak = np.unravel_index(int(heat.argmax()), heat.shape)
    return {"index": index, "class": loaded.classes[index], "peak": [int(peak[0]), int(peak[1])],
            "png": pictures.overlay(prepared.seen, heat)}
