"""The trainer's side of a task (torch): what a training run asks the task
of its dataset and model. The torch-free registration (``base.Task``) names
the module that holds it (``Task.training``), a module with a ``Training``
class; the loop in ``trainer.train`` is the same for every task.

A task's training says:

- ``build(network, channels, classes, height, width)``: the network of a
  job's ``network`` param, for the dataset's images and classes;
- ``criterion()``: the loss of a batch, ``loss(outputs, targets)``;
- ``evaluation(device)``: an ``Evaluation`` that takes the outputs and
  targets of each batch of a split and gives its loss and the task's metrics
  (``Task.metrics``' fields), summed over every process of the run;
- ``describe(metrics)``: the log line of a validation.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

import torch

from .base import Task


class Evaluation(Protocol):
    def update(self, outputs: torch.Tensor, targets: torch.Tensor) -> None: ...

    def compute(self) -> dict[str, float]:
        """``{"loss": ..., <metric field>: ...}`` over every batch given to any
        process of the run: a collective, and a host-device sync."""
        ...


class Training(Protocol):
    def __init__(self, task: Task, classes: int, config: dict[str, Any]) -> None: ...

    def build(self, network: dict[str, Any], channels: int, classes: int, height: int,
              width: int) -> torch.nn.Module: ...

    def criterion(self) -> torch.nn.Module: ...

    def evaluation(self, device: torch.device) -> Evaluation: ...

    def describe(self, metrics: dict[str, float]) -> str: ...


def training_for(task: Task, classes: int, config: dict[str, Any]) -> Training:
    """The training side of ``task`` for a dataset of ``classes`` classes and a job's ``config``;
    ValueError for a task that does not train."""
    if task.training is None:
        raise ValueError(f"No network of this app trains for {task.label.lower()} yet.")
    return importlib.import_module(task.training).Training(task, classes, config)
