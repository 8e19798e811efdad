"""A network's layer table, parameter counts and FLOPs per image.

One forward pass of a single zero image, in eval mode and without
gradients, with forward hooks on the leaf modules (and on attention modules
as a whole, since they use their projections' weights without calling them).
Modules that hold parameters of their own besides their children (a ViT's
class token, its positional embedding) get a row too. FLOPs are counted as
2 × multiply-accumulates for convolutions, linear layers and attention
(projections and both matmuls); other layers count as free.

torch is imported when a summary is made, not with this module: the
package's ``__init__`` imports it, and the web app imports the package to
validate layer lists without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn


def _first_tensor(value: Any) -> torch.Tensor | None:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, list | tuple):
        for item in value:
            found = _first_tensor(item)
            if found is not None:
                return found
    return None


def _attention_macs(module: nn.MultiheadAttention, args: tuple, kwargs: dict[str, Any]) -> int:
    query = args[0] if args else kwargs["query"]
    key = args[1] if len(args) > 1 else kwargs.get("key", query)
    sequence = 1 if module.batch_first else 0
    targets = query.shape[sequence] if query.dim() == 3 else query.shape[0]
    sources = key.shape[sequence] if key.dim() == 3 else key.shape[0]
    embed = module.embed_dim
    projections = targets * embed * embed + sources * embed * (module.kdim + module.vdim) + targets * embed * embed
    return projections + 2 * targets * sources * embed


def _macs(module: nn.Module, args: tuple, kwargs: dict[str, Any], output: torch.Tensor | None, batch: int) -> int:
    from torch import nn

    if output is None:
        return 0
    per_image = output.numel() // batch
    if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d):
        kernel = 1
        for size in module.kernel_size:
            kernel *= size
        return per_image * (module.in_channels // module.groups) * kernel
    if isinstance(module, nn.Linear):
        return per_image * module.in_features
    if isinstance(module, nn.MultiheadAttention):
        return _attention_macs(module, args, kwargs)
    return 0


def _output_shape(module: nn.Module, output: torch.Tensor | None) -> list[int]:
    from torch import nn

    if output is None:
        return []
    if isinstance(module, nn.MultiheadAttention) and not module.batch_first and output.dim() == 3:
        return [output.shape[0], output.shape[2]]
    return list(output.shape[1:])


def _units(model: nn.Module) -> list[tuple[str, nn.Module, bool]]:
    """(name, module, whole): leaves and attention modules count all their
    parameters (whole); other modules get a row only for parameters of their own."""
    from torch import nn

    units = []
    inside: list[str] = []
    for name, module in model.named_modules():
        if any(name.startswith(prefix + ".") for prefix in inside):
            continue
        if isinstance(module, nn.MultiheadAttention) or not any(True for _ in module.children()):
            units.append((name, module, True))
            inside.append(name)
        elif any(True for _ in module.parameters(recurse=False)):
            units.append((name, module, False))
    return units


def summary(model: nn.Module, channels: int, height: int, width: int) -> dict[str, Any]:
    """{"layers": [{"name", "type", "output_shape", "params"}], "params",
    "trainable", "flops_per_image"} for ``model`` on channels×height×width images.

    A module run several times gets a row per run; its parameters are counted
    in the first. Output shapes leave out the batch dimension.
    """
    import torch

    rows: list[dict[str, Any]] = []
    flops = 0
    counted: set[int] = set()
    batch = 1

    def hook_for(name: str, whole: bool):
        def hook(module: nn.Module, args: tuple, kwargs: dict[str, Any], output: Any) -> None:
            nonlocal flops
            tensor = _first_tensor(output)
            params = 0
            if id(module) not in counted:
                counted.add(id(module))
                params = sum(p.numel() for p in module.parameters(recurse=whole))
            flops += 2 * _macs(module, args, kwargs, tensor, batch)
            rows.append({"name": name or "model", "type": type(module).__name__,
                         "output_shape": _output_shape(module, tensor), "params": params})

        return hook

    first = next(model.parameters(), None)
    device = first.device if first is not None else torch.device("cpu")
    dtype = first.dtype if first is not None and first.is_floating_point() else torch.float32
    handles = [module.register_forward_hook(hook_for(name, whole), with_kwargs=True)
               for name, module, whole in _units(model)]
    training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(torch.zeros(batch, channels, height, width, device=device, dtype=dtype))
    finally:
        model.train(training)
        for handle in handles:
            handle.remove()
    parameters = list(model.parameters())
    return {
        "layers": rows,
        "params": sum(p.numel() for p in parameters),
        "trainable": sum(p.numel() for p in parameters if p.requires_grad),
        "flops_per_image": int(flops),
    }
