"""Checkpoints: one dict with everything needed to resume (model unwrapped
from DDP and compile, optimizer, scaler, position in the data, random
generators, best-so-far), written atomically by rank 0 and loaded with
``weights_only=True`` so a checkpoint file can never run code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The plain module under DistributedDataParallel and torch.compile."""
    while True:
        inner = getattr(model, "module", None) or getattr(model, "_orig_mod", None)
        if inner is None:
            return model
        model = inner


def save(path: Path, state: dict[str, Any]) -> None:
    """Write ``path`` whole or not at all: into a file beside it, renamed over
    it once complete. A write that fails (a full disk) leaves the earlier
    file as it was and removes its own partial one, giving the space back.
    The file is opened here so that a full disk surfaces as Python's
    ``OSError`` (the context of torch's own error), which
    ``diskspace.is_full`` recognises; torch's writer would only say
    "unexpected pos"."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as handle:
            torch.save(state, handle)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def load(path: Path | str) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)


def matching_weights(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[str]]:
    """The weights whose names and shapes fit ``model``, and the names left
    out (a classifier for another number of classes, say)."""
    own = model.state_dict()
    kept = {k: v for k, v in weights.items() if k in own and own[k].shape == v.shape}
    dropped = sorted(set(own) - set(kept))
    return kept, dropped
