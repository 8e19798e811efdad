"""Semantic segmentation's training side: torchvision's segmentation
networks and a small U-Net, trained from scratch (``weights=None,
weights_backbone=None``: nothing is downloaded), per-pixel cross-entropy
that leaves out the ignored pixels, and mIoU, pixel accuracy and Dice from
torchmetrics' confusion matrix.

A batch's targets are the stored masks, B×H×W uint8 (``IGNORE`` where a
pixel counts for nothing, see ``trainer.segmentation.targets``). The
networks give one logit a class a pixel at the input's size
(torchvision's upsample their output to it; their auxiliary heads are off).

Augmentation: what moves pixels by re-indexing them (crops, translations,
flips) moves the masks with them, by the same gather (``follow``);
rotation and zoom, which resample the pixels, are refused, as are
classification's test-time augmentation and label smoothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torchmetrics.aggregation import MeanMetric
from torchmetrics.classification import MulticlassConfusionMatrix
from torchvision.models import segmentation

from trainer.augment import Positions, take
from trainer.catalog import SEGMENTATION_NETWORKS
from trainer.networks import NetworkError
from trainer.networks.unet import UNet
from trainer.segmentation.labels import IGNORE
from trainer.tta import Predictor

from .base import Task

# The catalogue's names (``catalog.SEGMENTATION_NETWORKS``) of torchvision's networks, with their builders.
TORCHVISION: dict[str, Callable[..., torch.nn.Module]] = {
    "fcn_resnet50": segmentation.fcn_resnet50,
    "deeplabv3_resnet50": segmentation.deeplabv3_resnet50,
    "deeplabv3_mobilenet_v3_large": segmentation.deeplabv3_mobilenet_v3_large,
    "lraspp_mobilenet_v3_large": segmentation.lraspp_mobilenet_v3_large,
}


class Logits(torch.nn.Module):
    """A torchvision segmentation network giving its logits (its ``out``) rather than a dict of them."""

    def __init__(self, network: torch.nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)["out"]


def pixel_loss(logits: torch.Tensor, masks: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of each labelled pixel: the mean over them (0 for a
    batch with none, not NaN), or their ``sum``; no host-device sync."""
    summed = F.cross_entropy(logits.float(), masks.long(), ignore_index=IGNORE, reduction="sum")
    if reduction == "sum":
        return summed
    return summed / (masks != IGNORE).sum().clamp(min=1)


def scores(confusion: torch.Tensor) -> dict[str, float]:
    """mIoU, pixel accuracy and Dice of a C×C confusion matrix (rows the true
    class, columns the predicted one), over the classes that occur in the
    truth or the prediction: a class absent from both says nothing."""
    confusion = confusion.double()
    hits = confusion.diagonal()
    truth, predicted = confusion.sum(dim=1), confusion.sum(dim=0)
    seen = (truth + predicted) > 0
    union = truth + predicted - hits
    total = confusion.sum()
    if not seen.any():
        return {"miou": 0.0, "pixel_accuracy": 0.0, "dice": 0.0}
    return {"miou": float((hits[seen] / union[seen]).mean()),
            "pixel_accuracy": float(hits.sum() / total),
            "dice": float((2 * hits[seen] / (truth + predicted)[seen]).mean())}


class Evaluation:
    """The validation loss (per labelled pixel) and the confusion matrix of
    every labelled pixel, both summed over the run's processes on compute."""

    def __init__(self, classes: int, device: torch.device) -> None:
        self.loss = MeanMetric(nan_strategy="disable").to(device)
        self.confusion = MulticlassConfusionMatrix(classes, ignore_index=IGNORE, validate_args=False,
                                                   sync_on_compute=True).to(device)

    def update(self, outputs: torch.Tensor, targets: torch.Tensor) -> None:
        labelled = (targets != IGNORE).sum()
        self.loss.update(pixel_loss(outputs, targets, "sum") / labelled.clamp(min=1), weight=labelled)
        self.confusion.update(outputs.argmax(dim=1), targets.long())

    def compute(self) -> dict[str, float]:
        return {"loss": float(self.loss.compute()), **scores(self.confusion.compute())}


class Training:
    def __init__(self, task: Task, classes: int, config: dict[str, Any]) -> None:
        self.task, self.classes = task, classes
        if chosen := task.refused(config):
            shown = ", ".join(f"{name} = {config[name]}" for name in chosen)
            reasons = "; ".join(dict.fromkeys(chosen.values()))
            raise ValueError(f"A segmentation run cannot use {shown} yet: {reasons}.")

    def build(self, network: dict[str, Any], channels: int, classes: int, height: int, width: int) -> torch.nn.Module:
        """The catalogue's network ``network["name"]`` (a standard network)
        giving ``classes`` logits a pixel, untrained."""
        name = network.get("name") if network.get("source") == "standard" else None
        if name not in SEGMENTATION_NETWORKS:
            raise NetworkError("A segmentation model is one of the segmentation networks: "
                               + ", ".join(info.label for info in SEGMENTATION_NETWORKS.values()) + ".")
        if name == "unet":
            return UNet(channels, classes)
        if channels != 3:
            raise NetworkError(f"{SEGMENTATION_NETWORKS[name].label} takes colour images: build the dataset with "
                               f"3 channels, or choose the U-Net.")
        return Logits(TORCHVISION[name](weights=None, weights_backbone=None, num_classes=classes, aux_loss=False))

    def loss(self, net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, None]:
        return pixel_loss(net(x), y), None

    def follow(self, targets: torch.Tensor, positions: Positions | None) -> torch.Tensor:
        """The masks gathered at the positions the images' pixels were (crops, translations, flips)."""
        if positions is None:
            return targets
        return take(targets[..., None], None, positions)[..., 0]

    def predict(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, views: Predictor) -> torch.Tensor:
        """The logits, B×C×H×W; ``views`` is none (test-time augmentation refused)."""
        return model(x)

    def evaluation(self, device: torch.device) -> Evaluation:
        return Evaluation(self.classes, device)

    def describe(self, metrics: dict[str, float]) -> str:
        shown = ", ".join(f"{metric.label} {metrics[metric.field]:.2%}" for metric in self.task.metrics)
        return f"loss {metrics['loss']:.4f}, {shown}"
