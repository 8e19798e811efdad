"""Networks for training jobs: standard ones, layer lists and Python code.

``build(spec, channels, classes, height, width)`` makes the network of a
job's ``params["network"]`` and checks that it fits the data;
``validate_layers`` checks a layer list; ``summary`` tabulates a network;
``customize`` gives the editable text of a standard network; ``STANDARD``
lists the standard networks.

Importing this package does not import torch (it is imported when a network
is built or summarised, and by ``STANDARD``): the web app validates layer
lists with ``validate_layers`` in processes that never load torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer.networks.layerspec import NetworkError, validate_layers
from trainer.networks.summary import summary

if TYPE_CHECKING:
    from torch import nn

__all__ = ["STANDARD", "NetworkError", "build", "customize", "summary", "validate_layers"]

SOURCES = ("standard", "layers", "python")


def _shape(*sizes: int) -> str:
    return "×".join(str(size) for size in sizes)


def _check_sizes(channels: int, classes: int, height: int, width: int) -> None:
    for name, value in (("channels", channels), ("classes", classes), ("height", height), ("width", width)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise NetworkError(f"The data's {name} must be a positive integer, not {value!r}")


def _make(spec: dict[str, Any], channels: int, classes: int, height: int, width: int) -> nn.Module:
    source = spec.get("source") if isinstance(spec, dict) else None
    if source == "standard":
        from trainer.networks.standard import STANDARD

        name = spec.get("name")
        if name not in STANDARD:
            raise NetworkError(f"Unknown standard network {name!r}; known: {', '.join(STANDARD)}")
        try:
            return STANDARD[name].build(channels, classes, height, width)
        except (RuntimeError, ValueError) as exc:
            raise NetworkError(f"{STANDARD[name].label} cannot be built for {_shape(channels, height, width)} images "
                               f"and {classes} classes: {exc}") from None
    if source in ("layers", "python"):
        text = spec.get("text")
        if not isinstance(text, str) or not text.strip():
            raise NetworkError("The network's text is empty" if source == "python" else "The layer list is empty")
        if source == "layers":
            checked = validate_layers(text)
            from trainer.networks.layers import build_layers

            return build_layers(checked, channels, classes, height, width)
        from trainer.networks.code import build_code

        return build_code(text, channels, classes, height, width)
    raise NetworkError(f"A network is given by a source, one of {', '.join(SOURCES)}; got {spec!r}")


def _check_fit(model: nn.Module, spec: dict[str, Any], channels: int, classes: int, height: int, width: int) -> None:
    import torch

    prefix = f"The network does not fit the data ({_shape(channels, height, width)} input)"
    model.eval()
    try:
        with torch.no_grad():
            output = model(torch.zeros(2, channels, height, width))
    except NetworkError:
        raise
    except (Exception, SystemExit) as exc:
        if spec["source"] == "python":
            from trainer.networks.code import describe

            raise NetworkError(f"{prefix}:\n{describe(exc, spec['text'])}") from None
        shown = str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}"
        raise NetworkError(f"{prefix}: {shown}") from None
    if not isinstance(output, torch.Tensor):
        raise NetworkError(f"{prefix}: its output is a {type(output).__name__}; it must be one tensor of class scores")
    if tuple(output.shape) != (2, classes):
        raise NetworkError(f"{prefix}: its output for a batch of 2 images is {_shape(*output.shape)}; "
                           f"it must be 2×{classes} (one score per class)")


def build(spec: dict[str, Any], channels: int, classes: int, height: int, width: int) -> nn.Module:
    """The network of ``spec`` (a job's ``params["network"]``) for
    channels×height×width images and ``classes`` classes, in train mode, on the CPU.

    It is checked by one forward pass of two zero images in eval mode; any
    failure raises ``NetworkError`` with a message for the user.
    """
    _check_sizes(channels, classes, height, width)
    model = _make(spec, channels, classes, height, width)
    _check_fit(model, spec, channels, classes, height, width)
    return model.train()


def customize(name: str) -> dict[str, str]:
    """``{"source": "layers"|"python", "text"}``: the editable text that rebuilds standard network ``name``."""
    from trainer.networks.standard import customize as text_of

    return text_of(name)


def __getattr__(name: str) -> Any:
    if name == "STANDARD":
        from trainer.networks.standard import STANDARD

        return STANDARD
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
