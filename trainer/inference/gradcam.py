"""Where the network looked: Grad-CAM (Selvaraju et al. 2017,
https://arxiv.org/abs/1610.02391) at one convolution.

Written here with forward hooks and ``torch.autograd.grad`` (the method is
a weighted sum of feature maps) rather than taken from ``grad-cam`` or
``captum``: neither adds what our networks need, and both bring their own
dependencies and model wrappers for thirty lines of arithmetic.

The layer: the one the user names, else the deepest convolution to run
whose output is at least ``MIN_SIDE`` (7) on each side. That is the usual
layer at ImageNet's 224×224 (ResNet's and VGG's last convolution, 7×7, the
paper's choice); at smaller inputs the last convolution shrinks to a few
cells (2×2 for ResNet-18 at 64×64), whose map upsampled is a uniform wash,
so an earlier one with room to say where is taken. When none reaches 7×7
(a tiny input), the one with the largest output.

The class's score is back-propagated to that layer's output; each of its
channels is weighted by the mean of its gradient, the weighted sum is
rectified, upsampled to the input and scaled to [0, 1]. The upsampling
assumes the map covers the whole image, which padded convolutions keep
true; after unpadded ones (DIGITS' LeNet) the map lacks the lost border
and its peaks sit a few pixels towards the image's edges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import pictures
from .errors import InferenceError
from .model import Loaded
from .preprocess import Prepared

MIN_SIDE = 7


@dataclass
class Heat:
    """``heat``: float h×w in [0, 1] over the input; ``index``: the class;
    ``layer`` and ``size`` (its output's height and width): where it was computed;
    ``layers``: every convolution in the order it ran, with its output's size."""

    heat: np.ndarray
    index: int
    layer: str
    size: tuple[int, int]
    layers: list[tuple[str, tuple[int, int]]]


def default_layer(layers: list[tuple[str, tuple[int, int]]]) -> str:
    """The deepest of ``layers`` (name, output size, in running order) at least
    ``MIN_SIDE`` on each side; else the deepest of the largest output."""
    useful = [name for name, size in layers if min(size) >= MIN_SIDE]
    if useful:
        return useful[-1]
    largest = max(height * width for _, (height, width) in layers)
    return [name for name, (height, width) in layers if height * width == largest][-1]


def grad_cam(loaded: Loaded, x: torch.Tensor, class_index: int | None = None, layer: str | None = None) -> Heat:
    """The Grad-CAM of one input ``x`` (C×h×w) for ``class_index`` (default:
    the top class) at the convolution named ``layer`` (default: ``default_layer``)."""
    model, outputs = loaded.model, {}
    convolutions = [(name, module) for name, module in model.named_modules() if isinstance(module, nn.Conv2d)]
    if not convolutions:
        raise InferenceError("The network has no convolution to look at.")

    def keeper(name: str):
        def keep(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
            outputs.setdefault(name, output)  # a module run twice: its first run

        return keep

    handles = [module.register_forward_hook(keeper(name)) for name, module in convolutions]
    try:
        with torch.enable_grad():
            scores = model(x[None].to(loaded.device))
            layers = [(name, tuple(output.shape[2:])) for name, output in outputs.items()]
            chosen = layer or default_layer(layers)
            if chosen not in outputs:
                raise InferenceError(f"The network has no convolution named {chosen!r}; "
                                     f"choose one of {', '.join(name for name, _ in layers)}.")
            index = int(scores[0].argmax()) if class_index is None else class_index
            if not 0 <= index < scores.shape[1]:
                raise InferenceError(f"The class {index} is not one of this model's {scores.shape[1]}.")
            activation = outputs[chosen]
            gradient, = torch.autograd.grad(scores[0, index], activation)
    finally:
        for handle in handles:
            handle.remove()
    activation = activation.detach()
    cam = F.relu((gradient.mean(dim=(2, 3), keepdim=True) * activation).sum(dim=1, keepdim=True))
    cam = F.interpolate(cam, size=x.shape[1:], mode="bilinear", align_corners=False)[0, 0]
    cam = cam / cam.max().clamp_min(1e-12)
    return Heat(heat=cam.cpu().numpy(), index=index, layer=chosen, size=tuple(activation.shape[2:]), layers=layers)


def saliency(loaded: Loaded, prepared: Prepared, class_index: int | None = None,
             layer: str | None = None) -> dict[str, Any]:
    """``{"index", "class", "peak": [row, column], "png", "layer", "size", "layers": [{"name", "size"}]}``:
    the Grad-CAM of ``prepared`` overlaid on the image as the network saw it, and where it was computed."""
    found = grad_cam(loaded, prepared.tensor, class_index, layer)
    peak = np.unravel_index(int(found.heat.argmax()), found.heat.shape)
    return {"index": found.index, "class": loaded.classes[found.index], "peak": [int(peak[0]), int(peak[1])],
            "png": pictures.overlay(prepared.seen, found.heat), "layer": found.layer, "size": list(found.size),
            "layers": [{"name": name, "size": list(size)} for name, size in found.layers]}
