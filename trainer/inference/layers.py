"""Looking inside a network with one image: every layer in the order it
runs, with its name, type, output shape and parameter count (the rows
``trainer.networks.summary`` gives the training page), its activations as
a tiled picture of channels, a convolution's filters, and the mean,
standard deviation and histogram of its activations and its weights."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainer.networks.summary import _first_tensor, _output_shape, _units
from trainer.telemetry import _histogram

from . import pictures
from .model import Loaded
from .preprocess import Prepared


def statistics(values: torch.Tensor) -> dict[str, Any]:
    values = values.detach().float()
    return {"mean": values.mean().item(), "std": values.std(correction=0).item(), "histogram": _histogram(values)}


def _weights(module: nn.Module) -> dict[str, Any] | None:
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor):
        return None
    drawn = pictures.filters(weight) if isinstance(module, nn.Conv2d) else None
    return {"shape": list(weight.shape), "filters": drawn, **statistics(weight)}


def inspect(loaded: Loaded, prepared: Prepared) -> dict[str, Any]:
    """``{"layers": [...], "params", "trainable"}`` for ``prepared`` (see
    ``preprocess``). Each layer: ``name``, ``type``, ``output_shape``,
    ``params``, ``activations`` (PNG bytes, with ``activation_stats``) and
    ``weights`` (None, or shape, mean, std, histogram and, for a
    convolution, ``filters`` as PNG bytes). A module run several times gets
    a row per run; its parameters count in the first."""
    model = loaded.model
    outputs: list[tuple[str, nn.Module, bool, torch.Tensor | None]] = []

    def hook_for(name: str, whole: bool):
        def hook(module: nn.Module, args: tuple, output: Any) -> None:
            outputs.append((name or "model", module, whole, _first_tensor(output)))

        return hook

    handles = [module.register_forward_hook(hook_for(name, whole)) for name, module, whole in _units(model)]
    try:
        with torch.inference_mode():
            model(prepared.tensor[None].to(loaded.device))
    finally:
        for handle in handles:
            handle.remove()
    layers, counted = [], set()
    for name, module, whole, output in outputs:
        first = id(module) not in counted
        counted.add(id(module))
        activation = output[0] if output is not None else None
        layers.append({
            "name": name, "type": type(module).__name__, "output_shape": _output_shape(module, output),
            "params": sum(p.numel() for p in module.parameters(recurse=whole)) if first else 0,
            "activations": pictures.activations(activation) if activation is not None else None,
            "activation_stats": statistics(activation) if activation is not None else None,
            "weights": _weights(module) if first else None,
        })
    parameters = list(model.parameters())
    return {"layers": layers, "params": sum(p.numel() for p in parameters),
            "trainable": sum(p.numel() for p in parameters if p.requires_grad)}
