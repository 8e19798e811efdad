"""An average of a model's weights over training, the model a job delivers.

Two kinds (the training params' ``averaging``):

- ``ema``: an exponential moving average kept beside the weights, which
  train on undisturbed;
- ``lookahead`` (airbench's, from hlb-cifar10): the same average, and every
  time it moves the weights are set to it, so training goes on from the
  average.

Every ``every`` optimiser steps (counted in batches, as the learning rate
is) the average takes ``average = d * average + (1 - d) * weights`` with
``d = decay ** every * (step / total_steps) ** 3``: airbench's 0.95 a step,
every 5 steps, and a cube that keeps the average close to the weights early
on, while they change fast. Floating-point buffers (BatchNorm's running
statistics) are averaged with the parameters; integer ones (batch counts)
stay the model's.

The averaged weights are what the job delivers: evaluation runs inside
``evaluated()``, and the best, snapshot and exported checkpoints hold
``weights()``. ``NoAverage`` is the same interface doing nothing, chosen
once when the run starts so that the step has no branch for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn

KINDS = ("ema", "lookahead")
Weights = dict[str, Tensor]


class NoAverage:
    """No average: the model's own weights are the result."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def update(self, step: int) -> None:
        """Nothing to do."""

    @contextmanager
    def evaluated(self) -> Iterator[None]:
        yield

    def weights(self) -> Weights:
        return self.model.state_dict()

    def training_weights(self) -> Weights | None:
        """The weights training goes on from, when they are not ``weights()``."""
        return None

    def load(self, weights: Weights) -> None:
        """Nothing to restore."""


class WeightAverage(NoAverage):
    """The ``ema`` or ``lookahead`` average of ``model``'s floating-point
    parameters and buffers (see the module's docstring)."""

    def __init__(self, model: nn.Module, kind: str, decay: float, every: int, total_steps: int) -> None:
        if kind not in KINDS:
            raise ValueError(f"averaging must be one of {', '.join(KINDS)}, not {kind!r}")
        if not 0 <= decay < 1 or every < 1 or total_steps < 1:
            raise ValueError("averaging needs a decay in [0, 1), every >= 1 step and total_steps >= 1")
        super().__init__(model)
        self.lookahead = kind == "lookahead"
        self.decay, self.every, self.total_steps = decay, every, total_steps
        # state_dict's tensors share the model's storage: writing them writes the model.
        self.live = {name: tensor for name, tensor in model.state_dict().items() if tensor.is_floating_point()}
        self.average = {name: tensor.clone() for name, tensor in self.live.items()}

    def decay_at(self, step: int) -> float:
        return self.decay ** self.every * (min(step, self.total_steps) / self.total_steps) ** 3

    @torch.no_grad()
    def update(self, step: int) -> None:
        if step % self.every:
            return
        weight = 1 - self.decay_at(step)
        for name, tensor in self.live.items():
            average = self.average[name]
            average.lerp_(tensor, weight)
            if self.lookahead:
                tensor.copy_(average)

    @contextmanager
    def evaluated(self) -> Iterator[None]:
        """The model holds the average inside, its own weights again after."""
        own = {name: tensor.clone() for name, tensor in self.live.items()}
        self._set(self.average)
        try:
            yield
        finally:
            self._set(own)

    def weights(self) -> Weights:
        return {**self.model.state_dict(), **self.average}

    def training_weights(self) -> Weights | None:
        return self.model.state_dict()

    @torch.no_grad()
    def load(self, weights: Weights) -> None:
        for name, average in self.average.items():
            average.copy_(weights[name])

    @torch.no_grad()
    def _set(self, weights: Weights) -> None:
        for name, tensor in self.live.items():
            tensor.copy_(weights[name])


def make(model: nn.Module, settings: dict[str, Any] | None, total_steps: int) -> NoAverage:
    """The average a job's ``averaging`` params ask for (``{"kind", "decay",
    "every"}``, or None for none)."""
    if not settings:
        return NoAverage(model)
    return WeightAverage(model, settings["kind"], float(settings["decay"]), int(settings["every"]), total_steps)
