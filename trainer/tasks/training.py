"""The trainer's side of a task (torch): what a training run asks the task
of its dataset and model. The torch-free registration (``base.Task``) names
the module that holds it (``Task.training``), a module with a ``Training``
class; the loop in ``trainer.train`` is the same for every task.

A task's training says:

- ``build(network, channels, classes, height, width)``: the network of a
  job's ``network`` param, for the dataset's images and classes;
- ``loss(net, x, y)``: the training loss of a batch, forward pass
  included, as ``(total, components)``: ``components`` the detached parts
  by name whose sum is ``total`` (for the charts), or None;
- ``follow(targets, moved)``: a batch's targets moved as the training
  augmentation moved its pixels (``augment.Moved``, ``data.Batches``);
- ``predict(model, x, y, views)``: what the evaluation takes of a batch, the
  model in eval mode and no gradients, under the run's autocast; ``views``
  is the job's test-time augmentation (``tta.predictor``), for a task that
  applies it;
- ``evaluation(device)``: an ``Evaluation`` that takes those outputs and
  the targets of each batch of a split and gives its loss and the task's
  metrics (``Task.metrics``' fields), summed over every process of the run;
  for a task that names ``class_metrics``, its ``per_class(names)`` after
  ``compute`` gives a row a class (``{"class": name, <field>: value or
  None…}``), which the run's result reports for each split at its end;
- ``describe(metrics)``: the log line of a validation;
- ``backbone_weights(network, model, weights)``, for a task whose networks
  have a backbone (``NetworkInfo.backbone``) alone: a pretrained
  classifier's weights as the tensors of the model's backbone (a job's
  ``pretrained`` of mode ``backbone``);
- optionally ``split_report(model, batches, total, names, image_names,
  progress, **options)``: the evaluation job's report of a split of the
  model's dataset, or of new images stored as one (a ``SplitReport``;
  ``names`` the classes, ``image_names`` each image's as the report shows
  it, ``options`` the evaluation's ``report_options``, those its task's
  ``evaluation_options`` name), for a task whose report is its own; without
  it the job writes classification's (``trainer.inference.report``);
- with it, for a task that evaluates new images (``Task.evaluation_sources``),
  ``file_images(loaded, source, config, work)``: the labelled images of an
  evaluation's folder or archive, read as its dataset import reads them and
  stored in ``work`` as the dataset build stored its own (``FileImages``).

A task that cannot take one of the job's options (an augmentation that
would move its targets in a way ``follow`` does not) refuses it with a
ValueError when its training is made, which the loop shows as the job's
error.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from trainer.augment import Moved
from trainer.datastore import SplitReader
from trainer.tta import Predictor

from .base import Task


@dataclass
class SplitReport:
    """What the evaluation job writes of a task's own report
    (``trainer.evaluation_files``): ``report`` (report.json), ``rows``
    (results.json's rows), ``table`` (results.csv, its header first) and
    ``summary`` (the job's result event)."""

    report: dict[str, Any]
    rows: list[dict[str, Any]]
    table: list[list[Any]]
    summary: dict[str, Any]


@dataclass
class FileImages:
    """New labelled images an evaluation stored in its folder as a split of
    the dataset would be (``store``), each one's ``names`` as the source
    names it, and what was left out: ``skipped`` rows ``{"file", "line",
    "reason"}`` (``line`` None for a whole file)."""

    store: SplitReader
    names: list[str]
    skipped: list[dict[str, Any]]


class Evaluation(Protocol):
    def update(self, outputs: Any, targets: torch.Tensor) -> None: ...

    def compute(self) -> dict[str, float]:
        """``{"loss": ..., <metric field>: ...}`` over every batch given to any
        process of the run: a collective, and a host-device sync."""
        ...


class Training(Protocol):
    def __init__(self, task: Task, classes: int, config: dict[str, Any]) -> None: ...

    def build(self, network: dict[str, Any], channels: int, classes: int, height: int,
              width: int) -> torch.nn.Module: ...

    def loss(self, net: torch.nn.Module, x: torch.Tensor,
             y: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor] | None]: ...

    def follow(self, targets: torch.Tensor, moved: Moved) -> torch.Tensor: ...

    def predict(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, views: Predictor) -> Any: ...

    def evaluation(self, device: torch.device) -> Evaluation: ...

    def describe(self, metrics: dict[str, float]) -> str: ...


def training_for(task: Task, classes: int, config: dict[str, Any]) -> Training:
    """The training side of ``task`` for a dataset of ``classes`` classes and a job's ``config``;
    ValueError for a task that does not train."""
    if task.training is None:
        raise ValueError(f"No network of this app trains for {task.label.lower()} yet.")
    return importlib.import_module(task.training).Training(task, classes, config)
