"""Classification's training side: cross-entropy (with label smoothing
when asked) and top-1 / top-5 accuracy from torchmetrics."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torchmetrics import MetricCollection
from torchmetrics.aggregation import MeanMetric
from torchmetrics.classification import MulticlassAccuracy

from trainer.augment import Moved
from trainer.networks import build
from trainer.tta import Predictor

from .base import Task


class Evaluation:
    def __init__(self, classes: int, device: torch.device) -> None:
        # No argument checks and no NaN checks: each would read the device at
        # every batch. A NaN loss is caught after compute() by the loop.
        accuracy = {"average": "micro", "validate_args": False, "sync_on_compute": True}
        self.metrics = MetricCollection({
            "top1": MulticlassAccuracy(classes, top_k=1, **accuracy),
            "top5": MulticlassAccuracy(classes, top_k=min(5, classes), **accuracy),
        }).to(device)
        self.loss = MeanMetric(nan_strategy="disable").to(device)

    def update(self, outputs: torch.Tensor, targets: torch.Tensor) -> None:
        logits = outputs.float()
        self.loss.update(F.cross_entropy(logits, targets, reduction="none"))
        self.metrics.update(logits, targets)

    def compute(self) -> dict[str, float]:
        found = {name: float(value) for name, value in self.metrics.compute().items()}
        return {"loss": float(self.loss.compute()), **found}


class Training:
    def __init__(self, task: Task, classes: int, config: dict[str, Any]) -> None:
        self.task, self.classes = task, classes
        self.label_smoothing = float(config.get("label_smoothing") or 0.0)
        self.loss_of = self.criterion()

    def build(self, network: dict[str, Any], channels: int, classes: int, height: int, width: int) -> torch.nn.Module:
        """A network giving one logit a class (``trainer.networks``: standard, custom or pretrained)."""
        return build(network, channels, classes, height, width)

    def criterion(self) -> torch.nn.Module:
        """The training loss of logits and labels (the evaluation's has no smoothing)."""
        return torch.nn.CrossEntropyLoss(label_smoothing=self.label_smoothing)

    def loss(self, net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, None]:
        return self.loss_of(net(x), y), None

    def follow(self, targets: torch.Tensor, moved: Moved) -> torch.Tensor:
        """Labels: an image's class stays wherever its pixels go."""
        return targets

    def predict(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, views: Predictor) -> torch.Tensor:
        """The logits, averaged over the test-time augmentation's views."""
        return views(model, x)

    def evaluation(self, device: torch.device) -> Evaluation:
        return Evaluation(self.classes, device)

    def describe(self, metrics: dict[str, float]) -> str:
        shown = ", ".join(f"{metric.label} {metrics[metric.field]:.2%}" for metric in self.task.metrics)
        return f"loss {metrics['loss']:.4f}, {shown}"
