"""Checking a set of weights against a network before loading it, so a
snapshot of another architecture (or a downloaded state dict for another
network) is refused with a message that says what differs."""

from __future__ import annotations

import torch
from torch import nn

from .errors import InferenceError

SHOWN = 4  # names listed in a message at most


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def differences(model: nn.Module, weights: dict[str, torch.Tensor]) -> list[str]:
    """What keeps ``weights`` from loading into ``model`` exactly, in words; empty when it fits."""
    own = model.state_dict()
    missing = [k for k in own if k not in weights]
    unexpected = [k for k in weights if k not in own]
    reshaped = [f"{k} ({'×'.join(map(str, weights[k].shape))} instead of {'×'.join(map(str, own[k].shape))})"
                for k in own if k in weights and tuple(weights[k].shape) != tuple(own[k].shape)]
    found = []
    if missing:
        found.append(f"missing {_listed(missing)}")
    if unexpected:
        found.append(f"unknown {_listed(unexpected)}")
    if reshaped:
        found.append(f"shaped differently: {_listed(reshaped)}")
    return found


def load_exactly(model: nn.Module, weights: dict[str, torch.Tensor], what: str) -> None:
    """Load ``weights`` into ``model``, or raise ``InferenceError`` saying how
    ``what`` (e.g. "The snapshot epoch-3.pt") differs from the network."""
    if not isinstance(weights, dict) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise InferenceError(f"{what} holds no network weights (a dict of tensors).")
    found = differences(model, weights)
    if found:
        raise InferenceError(f"{what} is not for this network's architecture: " + "; ".join(found) + ".")
    model.load_state_dict(weights)
