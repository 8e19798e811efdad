"""A pretrained classifier's weights as the tensors of a task's network's
backbone (a job's ``pretrained`` of mode ``backbone``; the classifier is of
the network ``NetworkInfo.backbone`` names). Each task says where a
classifier's tensors sit in its networks (``Placement``); the weights must
fill every tensor of the backbone, else the run is refused before it
trains rather than left half-started."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainer.catalog import NetworkInfo
from trainer.networks import NetworkError


@dataclass(frozen=True)
class Placement:
    """Where a classifier's weights go in a task's network: its keys under
    ``taken[network]`` (the whole classifier but its head), renamed under
    ``prefix``, the key prefix of the network's backbone."""

    taken: dict[str, str]
    prefix: str


def backbone_weights(info: NetworkInfo, model: torch.nn.Module, weights: dict[str, torch.Tensor],
                     placement: Placement) -> dict[str, torch.Tensor]:
    """The classifier's ``weights`` as the tensors of the backbone of
    ``model`` (a network ``info`` describes); NetworkError unless they fill
    every one of them."""
    if info.backbone is None or info.backbone not in placement.taken:
        raise NetworkError(f"{info.label}'s backbone cannot start from a pretrained model.")
    taken = placement.taken[info.backbone]
    renamed = {placement.prefix + key[len(taken):]: value for key, value in weights.items() if key.startswith(taken)}
    own = {key: value for key, value in model.state_dict().items() if key.startswith(placement.prefix)}
    kept = {key: value for key, value in renamed.items() if key in own and own[key].shape == value.shape}
    if missing := sorted(set(own) - set(kept)):
        raise NetworkError(f"The pretrained model's weights do not fill {info.label}'s backbone "
                           f"({len(missing)} of its {len(own)} tensors missing or of another shape, e.g. "
                           f"{', '.join(missing[:3])}): start it from a {info.backbone} classifier.")
    return kept
