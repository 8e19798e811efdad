"""Building a validated layer list (``layerspec.validate_layers``) into an
``nn.Sequential``.

Input sizes are inferred by passing one zero image through the layers as
they are made, so the result is a plain network (no lazy modules) whose
state_dict has the final shapes. Modules are named by type and position
(``conv1``, ``maxpool2``, ...), matching the layer numbers in messages.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch
from torch import nn

from trainer.networks.layerspec import CLASSES, NetworkError

IMAGE_LAYERS = ("conv", "maxpool", "avgpool", "adaptiveavgpool", "lrn")


def _shape(shape: tuple[int, ...]) -> str:
    return "×".join(str(size) for size in shape)


def _count(value: int | str, classes: int) -> int:
    return classes if value == CLASSES else int(value)


def _pair(value: int | list[int] | None) -> int | tuple[int, int] | None:
    return tuple(value) if isinstance(value, list) else value


def _module(kind: str, args: dict[str, Any], shape: tuple[int, ...], classes: int) -> nn.Module:
    if kind == "conv":
        return nn.Conv2d(shape[0], _count(args["out"], classes), _pair(args["kernel"]), stride=_pair(args["stride"]),
                         padding=_pair(args["padding"]), groups=args["groups"], bias=args["bias"])
    if kind in ("maxpool", "avgpool"):
        pool = nn.MaxPool2d if kind == "maxpool" else nn.AvgPool2d
        return pool(_pair(args["kernel"]), stride=_pair(args["stride"]), padding=_pair(args["padding"]))
    if kind == "adaptiveavgpool":
        return nn.AdaptiveAvgPool2d(_pair(args["size"]))
    if kind == "batchnorm":
        norm = nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d
        return norm(shape[0], eps=args["eps"], momentum=args["momentum"])
    if kind == "linear":
        return nn.Linear(shape[0], _count(args["out"], classes), bias=args["bias"])
    if kind == "leakyrelu":
        return nn.LeakyReLU(args["slope"])
    if kind == "dropout":
        return nn.Dropout(args["p"])
    if kind == "lrn":
        return nn.LocalResponseNorm(args["size"], alpha=args["alpha"], beta=args["beta"], k=args["k"])
    simple = {"relu": nn.ReLU, "gelu": nn.GELU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "flatten": nn.Flatten}
    return simple[kind]()


def _check_input(index: int, kind: str, shape: tuple[int, ...]) -> None:
    if kind in IMAGE_LAYERS and len(shape) != 3:
        raise NetworkError(f"Layer {index} ({kind}): needs an image (channels×height×width) as input, "
                           f"but gets {_shape(shape)} features (it comes after a flatten or linear layer)")
    if kind == "linear" and len(shape) != 1:
        raise NetworkError(f"Layer {index} ({kind}): gets a {_shape(shape)} input; put a 'flatten' layer before it")
    if kind == "batchnorm" and len(shape) not in (1, 3):
        raise NetworkError(f"Layer {index} ({kind}): needs an image or a list of features, not a {_shape(shape)} input")


def build_layers(layers: list[dict[str, Any]], channels: int, classes: int, height: int, width: int) -> nn.Sequential:
    """Make the network of ``layers`` for images of ``channels``×``height``×``width``
    and ``classes`` classes; a layer that does not fit its input raises ``NetworkError``."""
    modules: OrderedDict[str, nn.Module] = OrderedDict()
    x = torch.zeros(1, channels, height, width)
    with torch.no_grad():
        for index, layer in enumerate(layers, 1):
            kind = layer["type"]
            shape = tuple(x.shape[1:])
            _check_input(index, kind, shape)
            try:
                module = _module(kind, layer["args"], shape, classes).eval()
                x = module(x)
            except (RuntimeError, ValueError) as exc:
                raise NetworkError(f"The network does not fit the data ({_shape((channels, height, width))} input): "
                                   f"layer {index} ({kind}) gets a {_shape(shape)} input: {exc}") from None
            modules[f"{kind}{index}"] = module
    return nn.Sequential(modules)
