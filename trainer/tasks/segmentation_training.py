"""Semantic segmentation's training side: torchvision's segmentation
networks and a small U-Net, trained from scratch (``weights=None,
weights_backbone=None``: nothing is downloaded) or, for torchvision's, with
the backbone started from a pretrained classifier of its network in the app
(``backbone_weights``), a per-pixel loss that
leaves out the ignored pixels (cross-entropy, weighted by class or not,
soft Dice, or both: the run option ``segmentation_loss``), and mIoU, pixel accuracy and Dice from
torchmetrics' confusion matrix.

A batch's targets are the stored masks, B×H×W uint8 (``IGNORE`` where a
pixel counts for nothing, see ``trainer.segmentation.targets``). The
networks give one logit a class a pixel at the input's size
(torchvision's upsample their output to it; their auxiliary heads are off).

Augmentation moves the masks with the pixels (``follow``): crops,
translations and flips, which re-index the pixels, by the same gather;
rotation and zoom, which resample them bilinearly, by nearest neighbour on
the same grid, what comes from outside the image ignored. Classification's
test-time augmentation and label smoothing are refused.

Its evaluation report is its own (``segmentation_report``), of a split or of
new images with their label images (``segmentation_files``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torchmetrics import Metric
from torchmetrics.classification import MulticlassConfusionMatrix
from torchvision.models import segmentation

from trainer.augment import Moved, take
from trainer.catalog import SEGMENTATION_NETWORKS
from trainer.networks import NetworkError
from trainer.networks.unet import UNet
from trainer.segmentation.labels import IGNORE
from trainer.segmentation.targets import Masks, pixel_counts
from trainer.tta import Predictor

from . import backbones, segmentation_files, segmentation_report
from .backbones import Placement
from .base import Task
from .training import SplitReport

DICE_LOSSES = ("dice", "cross_entropy_dice")
DICE_SMOOTHING = 1.0  # added to a class's overlap and its sizes: a class absent from both scores 1, not 0/0

# The catalogue's names (``catalog.SEGMENTATION_NETWORKS``) of torchvision's networks, with their builders.
TORCHVISION: dict[str, Callable[..., torch.nn.Module]] = {
    "fcn_resnet50": segmentation.fcn_resnet50,
    "deeplabv3_resnet50": segmentation.deeplabv3_resnet50,
    "deeplabv3_mobilenet_v3_large": segmentation.deeplabv3_mobilenet_v3_large,
    "lraspp_mobilenet_v3_large": segmentation.lraspp_mobilenet_v3_large,
}


# Where a classifier's trained weights go in a torchvision segmenter whose
# backbone is that network (``NetworkInfo.backbone``): its (dilated) feature
# extractor, inside ``Logits``. A dilation changes no tensor's shape.
BACKBONE = Placement({"resnet50": "", "mobilenet_v3": "features."}, "network.backbone.")

class Logits(torch.nn.Module):
    """A torchvision segmentation network giving its logits (its ``out``) rather than a dict of them."""

    def __init__(self, network: torch.nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)["out"]


def median_frequency_weights(dataset_dir: str | Path, classes: int) -> torch.Tensor:
    """Each class's weight for ``weighted_cross_entropy`` (Eigen and Fergus'
    median frequency balancing): the median over the classes of their share
    of the training split's labelled pixels, over the class's own share; 1
    for a class with no training pixel (it weighs nothing: none has it)."""
    counts = pixel_counts(Masks().read(Path(dataset_dir), "train"))[:, :classes].sum(axis=0).astype(np.float64)
    share = counts / max(counts.sum(), 1.0)
    present = share > 0
    if not present.any():
        return torch.ones(classes)
    median = np.median(share[present])
    return torch.from_numpy(np.where(present, median / np.where(present, share, 1.0), 1.0)).float()


def loss_sums(logits: torch.Tensor, masks: torch.Tensor, weights: torch.Tensor, dice: bool) -> dict[str, torch.Tensor]:
    """What the losses of a batch are made of, summed over its labelled
    pixels (no host-device sync): the cross-entropy (``ce``) and the
    labelled ``pixels``; weighted by the true class, ``weighted`` and its
    ``weight``; with ``dice``, per class the soft ``overlap`` of the
    predicted probabilities with the truth, the ``predicted`` and the
    ``truth`` (sums a split adds up as a batch's)."""
    logits = logits.float()
    labelled = masks != IGNORE
    classes = torch.where(labelled, masks.long(), 0)
    ce = F.cross_entropy(logits, masks.long(), ignore_index=IGNORE, reduction="none")
    weight = weights[classes] * labelled
    sums = {"ce": ce.sum(), "pixels": labelled.sum(), "weighted": (ce * weight).sum(), "weight": weight.sum()}
    if dice:
        inside = labelled[:, None].float()
        probabilities = logits.softmax(dim=1) * inside
        truth = F.one_hot(classes, logits.shape[1]).permute(0, 3, 1, 2).float() * inside
        sums.update(overlap=(probabilities * truth).sum(dim=(0, 2, 3)), predicted=probabilities.sum(dim=(0, 2, 3)),
                    truth=truth.sum(dim=(0, 2, 3)))
    return sums


def loss_of(kind: str, sums: dict[str, torch.Tensor]) -> torch.Tensor:
    """The loss ``kind`` (a choice of the run option ``segmentation_loss``) of ``loss_sums``: a batch's or a
    split's; 0 where no pixel is labelled, not NaN. Dice is one less the
    mean over the classes of their smoothed soft Dice coefficient."""
    cross_entropy = sums["ce"] / sums["pixels"].clamp(min=1)
    if kind == "cross_entropy":
        return cross_entropy
    if kind == "weighted_cross_entropy":
        return sums["weighted"] / sums["weight"].clamp(min=1e-12)
    dice = 1 - ((2 * sums["overlap"] + DICE_SMOOTHING) / (sums["predicted"] + sums["truth"] + DICE_SMOOTHING)).mean()
    return dice if kind == "dice" else cross_entropy + dice


class LossSums(Metric):
    """``loss_sums`` of every batch of a split, summed over the run's processes on compute."""

    full_state_update = False

    def __init__(self, classes: int, kind: str, weights: torch.Tensor) -> None:
        super().__init__(sync_on_compute=True)
        self.kind, self.dice = kind, kind in DICE_LOSSES
        self.register_buffer("weights", weights.float(), persistent=False)
        for name in ("ce", "pixels", "weighted", "weight"):
            self.add_state(name, torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        for name in ("overlap", "predicted", "truth"):
            self.add_state(name, torch.zeros(classes, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, logits: torch.Tensor, masks: torch.Tensor) -> None:
        for name, value in loss_sums(logits, masks, self.weights, self.dice).items():
            setattr(self, name, getattr(self, name) + value.double())

    def compute(self) -> torch.Tensor:
        return loss_of(self.kind, {name: getattr(self, name) for name in
                                   ("ce", "pixels", "weighted", "weight", "overlap", "predicted", "truth")})


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
    """The validation loss (the run's loss over the split's labelled pixels)
    and the confusion matrix of every labelled pixel, both summed over the
    run's processes on compute."""

    def __init__(self, classes: int, device: torch.device, kind: str, weights: torch.Tensor) -> None:
        self.loss = LossSums(classes, kind, weights).to(device)
        self.confusion = MulticlassConfusionMatrix(classes, ignore_index=IGNORE, validate_args=False,
                                                   sync_on_compute=True).to(device)

    def update(self, outputs: torch.Tensor, targets: torch.Tensor) -> None:
        self.loss.update(outputs, targets)
        self.confusion.update(outputs.argmax(dim=1), targets.long())

    def compute(self) -> dict[str, float]:
        return {"loss": float(self.loss.compute()), **scores(self.confusion.compute())}

    def per_class(self, names: list[str]) -> list[dict[str, Any]]:
        """Each class's pixels, IoU, Dice, precision and recall, after
        ``compute`` (whose confusion matrix torchmetrics keeps: no second
        collective)."""
        return segmentation_report.per_class(self.confusion.compute().cpu().numpy(), names)


class Training:
    def __init__(self, task: Task, classes: int, config: dict[str, Any]) -> None:
        self.task, self.classes = task, classes
        if chosen := task.refused(config):
            shown = ", ".join(f"{name} = {config[name]}" for name in chosen)
            reasons = "; ".join(dict.fromkeys(chosen.values()))
            raise ValueError(f"A segmentation run cannot use {shown} yet: {reasons}.")
        self.kind = str(task.run_option(config, "segmentation_loss"))
        self.dataset_dir = config.get("dataset_dir")
        self._weights: torch.Tensor | None = None

    def weights(self, device: torch.device) -> torch.Tensor:
        """The classes' weights in the loss on ``device``: median frequency's
        for ``weighted_cross_entropy`` (read from the training masks at the
        first use, not when a model is only loaded to be used), else ones."""
        if self._weights is None:
            if self.kind == "weighted_cross_entropy":
                self._weights = median_frequency_weights(self.dataset_dir, self.classes)
                print("class weights: " + ", ".join(f"{w:.3g}" for w in self._weights.tolist()), flush=True)
            else:
                self._weights = torch.ones(self.classes)
        if self._weights.device != device:
            self._weights = self._weights.to(device)
        return self._weights

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

    def backbone_weights(self, network: dict[str, Any], segmenter: torch.nn.Module,
                         weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A classifier's ``weights`` as the tensors of the ``segmenter``'s backbone (``backbones``)."""
        return backbones.backbone_weights(SEGMENTATION_NETWORKS[network["name"]], segmenter, weights, BACKBONE)

    def loss(self, net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, None]:
        return loss_of(self.kind, loss_sums(net(x), y, self.weights(y.device), self.kind in DICE_LOSSES)), None

    def follow(self, targets: torch.Tensor, moved: Moved) -> torch.Tensor:
        """The masks gathered at the positions the images' pixels were
        (crops, translations, flips), then resampled by nearest neighbour on
        the grid the pixels were (rotation, zoom): ``IGNORE`` where a pixel
        came from outside the image."""
        if moved.positions is not None:
            targets = take(targets[..., None], None, moved.positions)[..., 0]
        if moved.grid is None:
            return targets
        shifted = targets[:, None].to(moved.grid.dtype) + 1  # 0: outside the image, as grid_sample pads
        sampled = F.grid_sample(shifted, moved.grid, mode="nearest", padding_mode="zeros", align_corners=False)[:, 0]
        return torch.where(sampled == 0, IGNORE, sampled - 1).to(torch.uint8)

    def predict(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, views: Predictor) -> torch.Tensor:
        """The logits, B×C×H×W; ``views`` is none (test-time augmentation refused)."""
        return model(x)

    def evaluation(self, device: torch.device) -> Evaluation:
        return Evaluation(self.classes, device, self.kind, self.weights(device))

    def split_report(self, model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]], total: int,
                     names: list[str], image_names: Sequence[str],
                     progress: Callable[[int, int], None]) -> SplitReport:
        """The evaluation job's report of a split or of new images stored as one (``segmentation_report``)."""
        return segmentation_report.split_report(self, model, batches, total, names, image_names, progress)

    file_images = staticmethod(segmentation_files.file_images)

    def describe(self, metrics: dict[str, float]) -> str:
        shown = ", ".join(f"{metric.label} {metrics[metric.field]:.2%}" for metric in self.task.metrics)
        return f"loss {metrics['loss']:.4f}, {shown}"
