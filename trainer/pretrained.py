"""Pretrained weights for fine-tuning: a model archive (``trainer.export``)
or a plain PyTorch state dict for one of the standard networks (for
example torchvision's published ResNet-18 weights, downloaded by the user).

Weights are read with ``weights_only=True`` (or from safetensors) and loaded
into the network they claim to be for, exactly, before anything is kept: a
mismatch is refused with a message that says what differs. The result is
saved as the checkpoint a training job's ``pretrained`` option reads.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as safetensors_load

from trainer import checkpoint
from trainer.catalog import NETWORKS
from trainer.inference.errors import InferenceError
from trainer.inference.model import read_weights
from trainer.inference.weights import load_exactly
from trainer.networks import NetworkError, build
from trainer.tasks import task_of, uses

WRAPPERS = ("model", "state_dict")  # keys under which checkpoints commonly nest their weights
PREFIXES = ("module.", "_orig_mod.")  # left by DistributedDataParallel and torch.compile


@dataclass
class Pretrained:
    """Weights checked against ``network`` for ``channels`` × ``input_size`` images and ``classes``."""

    network: dict[str, Any]
    weights: dict[str, torch.Tensor]
    classes: list[str]
    channels: int
    input_size: tuple[int, int]

    def save(self, path: Path | str) -> Path:
        """Write the checkpoint a training job's ``pretrained: {"path": ...}`` loads."""
        checkpoint.save(Path(path), {"model": self.weights, "network": self.network, "classes": self.classes,
                                     "input": [self.channels, *self.input_size]})
        return Path(path)


def _unwrapped(state: Any) -> dict[str, torch.Tensor]:
    for key in WRAPPERS:
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict) or not state or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise InferenceError("The file holds no state dict (a dict of tensors by name).")
    for prefix in PREFIXES:
        if all(key.startswith(prefix) for key in state):
            state = {key.removeprefix(prefix): value for key, value in state.items()}
    return state


def _built(network: dict[str, Any], channels: int, classes: int, height: int, width: int) -> torch.nn.Module:
    try:
        return build(network, channels, classes, height, width)
    except NetworkError as exc:
        raise InferenceError(str(exc)) from None


def _class_count(network: dict[str, Any], weights: dict[str, torch.Tensor], channels: int,
                 size: tuple[int, int]) -> int:
    """The classes the weights' classifier scores: the first dimension of the
    tensors whose shape follows the class count (found by building the
    network for one class and for two)."""
    one, two = (_built(network, channels, count, *size).state_dict() for count in (1, 2))
    heads = [key for key in one if one[key].shape != two[key].shape]
    found = {int(weights[key].shape[0]) for key in heads if key in weights and weights[key].ndim}
    if len(found) != 1:
        raise InferenceError(f"The weights have no classifier that fits {network['name']} "
                             f"(looked for {', '.join(heads) or 'none'}).")
    return found.pop()


def _from_state_dict(state: Any, network_name: str, classes: list[str] | None) -> Pretrained:
    if network_name not in NETWORKS:
        raise InferenceError(f"Unknown standard network {network_name!r}; known: {', '.join(NETWORKS)}.")
    weights = _unwrapped(state)
    first = next((tensor for tensor in weights.values() if tensor.ndim == 4), None)
    if first is None:
        raise InferenceError("The weights have no convolution: they are not for an image network.")
    network, channels, size = {"source": "standard", "name": network_name}, int(first.shape[1]), NETWORKS[network_name].input_size
    count = _class_count(network, weights, channels, size)
    if classes is not None and len(classes) != count:
        raise InferenceError(f"The weights score {count} classes, not the {len(classes)} given.")
    model = _built(network, channels, count, *size)
    load_exactly(model, weights, f"The state dict for {NETWORKS[network_name].label}")
    names = list(classes) if classes is not None else [f"class {i}" for i in range(count)]
    return Pretrained(network, model.state_dict(), names, channels, size)


def _check_task(description: dict[str, Any]) -> None:
    """Refuse the archive of a model whose task cannot start a new model
    (``info.json``'s ``task``; archives from before it was written are
    classification's)."""
    try:
        task = task_of(description)
    except ValueError as exc:
        raise InferenceError(f"The archive is not a model archive of this app: {exc}") from None
    if not task.offers(uses.PRETRAINED):
        raise InferenceError(f"The archive holds a model of {task.label.lower()}: "
                             f"{uses.LABELS[uses.PRETRAINED]} is not available for {task.label} models.")


def _from_archive(data: bytes) -> Pretrained:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            description = json.loads(archive.read("info.json"))
            weights = safetensors_load(archive.read("weights.safetensors"))
    except (KeyError, ValueError, zipfile.BadZipFile, SafetensorError) as exc:
        raise InferenceError(f"The archive is not a model archive: {exc}") from None
    _check_task(description)
    classes, size = description["classes"], (description["height"], description["width"])
    model = _built(description["network"], description["channels"], len(classes), *size)
    load_exactly(model, weights, "The archive's weights")
    return Pretrained(description["network"], model.state_dict(), classes, description["channels"], size)


def _is_archive(file: Any) -> bool:
    """A model archive is a zip with ``info.json`` (``torch.save`` writes zips too, without it)."""
    if not zipfile.is_zipfile(file):
        return False
    with zipfile.ZipFile(file) as archive:
        return "info.json" in archive.namelist()


def import_pretrained(source: Path | str | bytes | dict[str, torch.Tensor], network_name: str | None = None,
                      classes: list[str] | None = None) -> Pretrained:
    """Pretrained weights from ``source``: a model archive (a path or its
    bytes; it names its own network and classes), a state dict file, or a
    state dict. A state dict is for the standard network ``network_name``;
    ``classes`` names its classifier's outputs (default: "class 0", ...)."""
    if isinstance(source, dict):
        return _from_state_dict(source, network_name, classes)
    data = source if isinstance(source, bytes) else None
    if _is_archive(io.BytesIO(data) if data is not None else source):
        return _from_archive(data if data is not None else Path(source).read_bytes())
    if network_name is None:
        raise InferenceError("Say which standard network the state dict is for.")
    if data is not None:
        try:
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as exc:  # torch.load raises many kinds on a file that is not a safe state dict
            raise InferenceError(f"The file is not a PyTorch weights file that can be read safely: {exc}") from None
    else:
        state = read_weights(Path(source), "The weights file")
    return _from_state_dict(state, network_name, classes)
