"""Object detection's training side: torchvision's detectors, trained from
scratch (``weights=None, weights_backbone=None``: nothing is downloaded),
their own losses, and mean average precision from torchmetrics.

A batch's targets are detection's stored rows, B×K×6 (``x1, y1, x2, y2,
class, flags``, see ``trainer.detection.targets``). A detector learns from
the objects alone: neither padding, ignore regions nor difficult boxes, with
label ``class + 1`` (0 is the background). The metric sees the difficult
boxes and the ignore regions as COCO's crowd regions (``iscrowd``): a
detection on one is neither a hit nor a false positive.

Pixels: the loop's ``Normalizer`` gives the network ``pixels/255 - mean``
(the job's ``mean``: image, pixel or none), as it does for every task, and
each detector's own transform is told to leave those values alone
(``image_mean`` 0, ``image_std`` 1): one normalisation, the job's, the same
at training, validation and export. Its resize is told the dataset's image
size (``min_size``, ``max_size``), so images keep their stored size instead
of being scaled to 800 pixels; the SSD networks alone resize to the fixed
input their anchors are laid out for (300 or 320 pixels a side).

Augmentation: horizontal flips alone, which ``follow`` applies to the boxes
(x1' = W - x2, x2' = W - x1); the options the registration refuses
(``Task.refused``) are refused again when the training is made, for a job
that did not come through the New model form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist
from torchmetrics.aggregation import MeanMetric
from torchmetrics.detection import MeanAveragePrecision
from torchvision.models import detection

from trainer.augment import Moved
from trainer.catalog import DETECTION_NETWORKS
from trainer.detection.targets import CLASS, DIFFICULT, FLAGS, IGNORE, NO_CLASS
from trainer.networks import NetworkError
from trainer.tasks.detection import SCORE_THRESHOLD
from trainer.tta import Predictor

from . import backbones, detection_files, detection_report
from .backbones import Placement
from .base import Task
from .training import SplitReport

# The catalogue's names (``catalog.DETECTION_NETWORKS``): torchvision's
# builder and whether it resizes to a fixed input of its own (SSD).
BUILDERS: dict[str, tuple[Callable[..., torch.nn.Module], bool]] = {
    "fasterrcnn_mobilenet_v3_large_fpn": (detection.fasterrcnn_mobilenet_v3_large_fpn, False),
    "fasterrcnn_resnet50_fpn": (detection.fasterrcnn_resnet50_fpn, False),
    "retinanet_resnet50_fpn": (detection.retinanet_resnet50_fpn, False),
    "fcos_resnet50_fpn": (detection.fcos_resnet50_fpn, False),
    "ssdlite320_mobilenet_v3_large": (detection.ssdlite320_mobilenet_v3_large, True),
    "ssd300_vgg16": (detection.ssd300_vgg16, True),
}


# Where a classifier's trained weights go in a detector whose backbone is
# that network (``NetworkInfo.backbone``): the body of its feature pyramid.
BACKBONE = Placement({"resnet50": "", "mobilenet_v3": "features."}, "backbone.body.")


def flip_boxes(targets: torch.Tensor, flipped: torch.Tensor, width: int) -> torch.Tensor:
    """Rows B×K×6 with the boxes of the images where ``flipped`` (B bools)
    mirrored left-right in a ``width`` pixels wide image: x1' = W - x2,
    x2' = W - x1. Every row moves, padding too (its corners mean nothing)."""
    flipped = flipped.reshape(-1, 1)
    moved = targets.clone()
    moved[..., 0] = torch.where(flipped, width - targets[..., 2], targets[..., 0])
    moved[..., 2] = torch.where(flipped, width - targets[..., 0], targets[..., 2])
    return moved


def learned(targets: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """Each image's objects as a detector's training targets: ``boxes``
    (M×4, xyxy pixels) and ``labels`` (class + 1); neither padding, ignore
    regions nor difficult boxes."""
    flags = targets[..., FLAGS].int()
    kept = (targets[..., CLASS] >= 0) & (flags & (IGNORE | DIFFICULT) == 0)
    counts = kept.sum(dim=1).tolist()  # host-device sync: the detectors take a list of tensors, one an image
    rows = targets[kept].split(counts)
    return [{"boxes": image[:, :4], "labels": image[:, CLASS].long() + 1} for image in rows]


def scored(rows: torch.Tensor, classes: int) -> dict[str, torch.Tensor]:
    """An image's rows (K×6, on the CPU) as the metric's ground truth:
    ``boxes``, ``labels`` (class + 1) and ``iscrowd`` (difficult boxes and
    ignore regions; one of every class covers them all)."""
    flags = rows[:, FLAGS].int()
    ignore = flags & IGNORE != 0
    every = ignore & (rows[:, CLASS] == NO_CLASS)
    kept = rows[(rows[:, CLASS] >= 0)]
    spread = rows[every].repeat_interleave(classes, dim=0)
    spread[:, CLASS] = torch.arange(classes, dtype=rows.dtype).repeat(int(every.sum()))
    together = torch.cat([kept, spread])
    crowd = together[:, FLAGS].int() & (IGNORE | DIFFICULT) != 0
    return {"boxes": together[:, :4], "labels": together[:, CLASS].long() + 1, "iscrowd": crowd.long()}


def at_score(result: dict[str, Any], threshold: float) -> tuple[float, float]:
    """Precision and recall of the detections scored at least ``threshold``,
    at an IoU of 0.5, averaged over the classes that have objects: read off
    the curves the metric drew (its extended summary: for each of 101 recall
    steps, the precision reached and the lowest score that reached it, as
    COCO's evaluation interpolates them), not counted again here. A class
    none of whose true positives scores that high has both at 0: the first
    step (recall 0) is reached by the class's best detection, hit or not, so
    a class counts as found only from the second step (recall 0.01) on."""
    precision = result["precision"][0, :, :, 0, -1]  # recall steps × classes, IoU 0.5, every area, most detections
    scores = result["scores"][0, :, :, 0, -1]
    steps = torch.linspace(0, 1, precision.shape[0], dtype=precision.dtype)
    present = precision[0] >= 0  # -1: a class with no object, only detections
    if not present.any():
        return 0.0, 0.0
    reached = scores[:, present] >= threshold
    last = torch.where(reached.any(dim=0), reached.shape[0] - 1 - reached.flip(0).int().argmax(dim=0), -1)
    found = last >= 1
    kept = precision[:, present].gather(0, last.clamp(min=0)[None])[0]
    return float(torch.where(found, kept, 0).mean()), float(torch.where(found, steps[last.clamp(min=0)], 0).mean())


@contextmanager
def losses_mode(model: torch.nn.Module) -> Iterator[None]:
    """The model in training mode, where torchvision's detectors give their
    losses, with its BatchNorm layers as they evaluate (running statistics
    used, not updated) and the random draws of its samplers (Faster R-CNN's
    proposals) kept out of the run's random streams; back in eval mode after."""
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        model.train()
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.eval()
        try:
            yield
        finally:
            model.eval()


def mean_average_precision(**options: Any) -> MeanAveragePrecision:
    """torchmetrics' mAP as this task scores it (faster-coco-eval, boxes as
    x1, y1, x2, y2 pixels), on the values given to the process that computes it."""
    return MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="faster_coco_eval", sync_on_compute=False,
                                **options)


class Evaluation:
    """The validation loss (the detector's losses on the split, as in
    ``losses_mode``) and mAP. The images' detections and ground truth are kept
    on the CPU; ``compute`` gathers every process's (their shares of the split
    differ) and scores them all in each."""

    def __init__(self, classes: int, device: torch.device, score_threshold: float = SCORE_THRESHOLD) -> None:
        self.classes, self.score_threshold = classes, score_threshold
        self.loss = MeanMetric(nan_strategy="disable").to(device)
        self.found: list[dict[str, torch.Tensor]] = []
        self.truth: list[dict[str, torch.Tensor]] = []

    def update(self, outputs: tuple[list[dict[str, torch.Tensor]], torch.Tensor], targets: torch.Tensor) -> None:
        detections, loss = outputs
        self.loss.update(loss.float(), weight=len(targets))
        # host-device syncs: the detections and targets of each batch to the CPU
        self.found += [{"boxes": found["boxes"].float().cpu(), "scores": found["scores"].float().cpu(),
                        "labels": found["labels"].cpu()} for found in detections]
        self.truth += [scored(rows, self.classes) for rows in targets.float().cpu()]

    def compute(self) -> dict[str, float]:
        """A collective, and a host-device sync."""
        loss = float(self.loss.compute())
        found, truth = self.found, self.truth
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            shares: list[Any] = [None] * dist.get_world_size()
            dist.all_gather_object(shares, (found, truth))
            found = [image for share, _ in shares for image in share]
            truth = [image for _, share in shares for image in share]
        metric = mean_average_precision(extended_summary=True)
        metric.update(found, truth)
        result = metric.compute()
        precision, recall = at_score(result, self.score_threshold)
        return {"loss": loss, "map50": float(result["map_50"]), "map": float(result["map"]), "precision": precision,
                "recall": recall}

    def detailed(self) -> dict[str, Any]:
        """This process's images scored with the per-class figures and the
        precision arrays (torchmetrics' ``class_metrics`` and
        ``extended_summary``), for the evaluation report of one process."""
        metric = mean_average_precision(class_metrics=True, extended_summary=True)
        metric.update(self.found, self.truth)
        return metric.compute()


class Training:
    def __init__(self, task: Task, classes: int, config: dict[str, Any]) -> None:
        self.task, self.classes = task, classes
        if chosen := task.refused(config):
            shown = ", ".join(f"{name} = {config[name]}" for name in chosen)
            reasons = "; ".join(dict.fromkeys(chosen.values()))
            raise ValueError(f"A detection run cannot use {shown} yet: {reasons}.")
        self.score_threshold = float(task.run_option(config, "score_threshold"))  # of the charted precision and recall

    def build(self, network: dict[str, Any], channels: int, classes: int, height: int, width: int) -> torch.nn.Module:
        """The catalogue's detector ``network["name"]`` (a standard network)
        for ``classes`` classes and the background, untrained."""
        name = network.get("name") if network.get("source") == "standard" else None
        if name not in BUILDERS:
            raise NetworkError("A detection model is one of the detection networks: "
                               + ", ".join(info.label for info in DETECTION_NETWORKS.values()) + ".")
        if channels != 3:
            raise NetworkError(f"{DETECTION_NETWORKS[name].label} takes colour images: build the dataset with "
                               f"3 channels, not {channels}.")
        builder, fixed_size = BUILDERS[name]
        options: dict[str, Any] = {"weights": None, "weights_backbone": None, "num_classes": classes + 1,
                                   "image_mean": [0.0] * 3, "image_std": [1.0] * 3}
        if not fixed_size:
            options.update(min_size=min(height, width), max_size=max(height, width))
        return builder(**options)

    def backbone_weights(self, network: dict[str, Any], detector: torch.nn.Module,
                         weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A classifier's ``weights`` (a pretrained model's, of the network
        ``NetworkInfo.backbone`` names) as the tensors of the ``detector``'s
        backbone; NetworkError unless they fill every one of them."""
        return backbones.backbone_weights(DETECTION_NETWORKS[network["name"]], detector, weights, BACKBONE)

    def loss(self, net: torch.nn.Module, x: torch.Tensor,
             y: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The sum of the detector's losses, and each (e.g. Faster R-CNN's
        loss_classifier, loss_box_reg, loss_objectness, loss_rpn_box_reg)."""
        losses = net(list(x), learned(y))
        return sum(losses.values()), {name: value.detach() for name, value in losses.items()}

    def follow(self, targets: torch.Tensor, moved: Moved) -> torch.Tensor:
        """The boxes flipped with the images: the moves here are flips alone
        (``__init__`` refuses the rest), columns reversed or not."""
        if moved.positions is None:
            return targets
        columns = moved.positions[1]
        return flip_boxes(targets, columns[:, 0] > columns[:, -1], columns.shape[1])

    def predict(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                views: Predictor) -> tuple[list[dict[str, torch.Tensor]], torch.Tensor]:
        """The detections (``boxes``, ``scores``, ``labels``) and the batch's
        loss (``losses_mode``); ``views`` is none (test-time augmentation refused)."""
        detections = model(list(x))
        with losses_mode(model):
            losses = model(list(x), learned(y))
        return detections, sum(losses.values())

    def evaluation(self, device: torch.device) -> Evaluation:
        return Evaluation(self.classes, device, self.score_threshold)

    def split_report(self, model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]], total: int,
                     names: list[str], image_names: Sequence[str], progress: Callable[[int, int], None],
                     score_threshold: float = SCORE_THRESHOLD) -> SplitReport:
        """The evaluation job's report of a split or of new images stored as
        one (``detection_report``), false positives and misses counted at
        ``score_threshold``."""
        return detection_report.split_report(self, model, batches, total, names, image_names, progress,
                                             score_threshold)

    file_images = staticmethod(detection_files.file_images)

    def describe(self, metrics: dict[str, float]) -> str:
        shown = ", ".join(f"{metric.label} {metrics[metric.field]:.2%}" for metric in self.task.metrics)
        return f"loss {metrics['loss']:.4f}, {shown}"
