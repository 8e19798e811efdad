"""Instance segmentation's training side: torchvision's Mask R-CNN (on
ResNet-50 with a feature pyramid, its v2, or a light MobileNetV3-Large
pyramid built as torchvision builds Faster R-CNN's), trained from scratch
(nothing is downloaded) or with the backbone from a pretrained classifier
of the app, its own losses (charted one by one), and mask and box mean
average precision from torchmetrics.

A batch's targets are the stored objects, B×H×W×2 uint8 (each pixel's class
and object number, see ``trainer.instances.targets``). A detector learns
from each image's objects (``learned``): its mask, the box round it and its
label ``class + 1`` (0 is the background); crowd regions are left out of
training and are COCO's ``iscrowd`` for the metric (a detection on one is
neither a hit nor a false positive).

Pixels are normalised once, by the loop (see ``detection_training``), and
the network's resize told the dataset's image size. Augmentation moves the
objects with the pixels, as semantic masks move (``follow``): crops,
translations and flips by the same gather, rotation and zoom by nearest
neighbour on the same grid, what comes from outside the image no object.
Classification's test-time augmentation and label smoothing are refused,
as is compiling (proposals change in number every batch, as a detector's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from pycocotools import mask as coco_mask
from torchmetrics.aggregation import MeanMetric
from torchmetrics.detection import MeanAveragePrecision
from torchvision.models import mobilenet_v3_large
from torchvision.models.detection import MaskRCNN, maskrcnn_resnet50_fpn, maskrcnn_resnet50_fpn_v2
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import _mobilenet_extractor
from torchvision.ops import masks_to_boxes

from trainer.augment import Moved, take
from trainer.catalog import INSTANCE_NETWORKS
from trainer.instances.targets import CLASS, CROWD, INSTANCE, MASK_THRESHOLD, boxes_shown
from trainer.networks import NetworkError
from trainer.segmentation.shapes import decoded
from trainer.tta import Predictor

from . import backbones, detection_report, instance_files
from .backbones import Placement
from .base import Task
from .detection import SCORE_THRESHOLD
from .detection_training import losses_mode
from .training import SplitReport


def maskrcnn_mobilenet_v3_large_fpn(num_classes: int, **options: Any) -> MaskRCNN:
    """Mask R-CNN on MobileNetV3-Large's last two stages with a feature
    pyramid, its anchors as torchvision's Faster R-CNN MobileNetV3-Large FPN
    lays them out (torchvision builds no Mask R-CNN on it)."""
    backbone = _mobilenet_extractor(mobilenet_v3_large(weights=None), True, 6)
    sizes = ((32, 64, 128, 256, 512),) * 3
    anchors = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))
    return MaskRCNN(backbone, num_classes, rpn_anchor_generator=anchors, rpn_score_thresh=0.05, **options)


BUILDERS: dict[str, Callable[..., torch.nn.Module]] = {
    "maskrcnn_mobilenet_v3_large_fpn": maskrcnn_mobilenet_v3_large_fpn,
    "maskrcnn_resnet50_fpn": partial(maskrcnn_resnet50_fpn, weights=None, weights_backbone=None),
    "maskrcnn_resnet50_fpn_v2": partial(maskrcnn_resnet50_fpn_v2, weights=None, weights_backbone=None),
}
BACKBONE = Placement({"resnet50": "", "mobilenet_v3": "features."}, "backbone.body.")


def image_objects(stored: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One image's objects (H×W×2): their masks (K×H×W bool), labels
    (class + 1) and the numbers they had, crowd regions left out."""
    numbers = stored[..., INSTANCE]
    found = torch.unique(numbers)  # host-device sync: the objects are counted
    found = found[(found > 0) & (found != CROWD)]
    masks = numbers[None] == found[:, None, None]
    labels = (stored[..., CLASS][None] * masks).flatten(1).amax(dim=1).long()
    return masks, labels, found


def boxes_of(masks: torch.Tensor) -> torch.Tensor:
    """The box round each mask (K×4, x1, y1, x2, y2 in continuous pixels: a
    one-pixel mask at x, y is x, y, x + 1, y + 1)."""
    boxes = masks_to_boxes(masks).float()
    return boxes + torch.tensor([0.0, 0.0, 1.0, 1.0], device=boxes.device)


def learned(targets: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """Each image's objects as Mask R-CNN's training targets."""
    found = []
    for stored in targets:
        masks, labels, _ = image_objects(stored)
        found.append({"boxes": boxes_of(masks), "labels": labels, "masks": masks.to(torch.uint8)})
    return found


def truth(stored: torch.Tensor) -> dict[str, Any]:
    """One image's ground truth for the metric, on the CPU: its objects, and
    its crowd regions split by class as ``iscrowd`` ones; masks as RLEs."""
    masks, labels, _ = image_objects(stored)
    crowd = stored[..., INSTANCE] == CROWD
    crowd_labels = torch.unique(stored[..., CLASS][crowd]).long()
    crowd_masks = crowd[None] & (stored[..., CLASS][None] == crowd_labels[:, None, None])
    every = torch.cat([masks, crowd_masks])
    return {"masks": _encoded(every), "boxes": boxes_of(every).cpu(), "labels": torch.cat([labels, crowd_labels]).cpu(),
            "iscrowd": torch.cat([torch.zeros(len(masks)), torch.ones(len(crowd_masks))]).long()}


def detected(found: dict[str, torch.Tensor]) -> dict[str, Any]:
    """One image's detections for the metric, on the CPU, masks as RLEs."""
    masks = found["masks"][:, 0] >= MASK_THRESHOLD
    return {"masks": _encoded(masks), "boxes": found["boxes"].float().cpu(), "scores": found["scores"].float().cpu(),
            "labels": found["labels"].cpu()}


def _encoded(masks: torch.Tensor) -> list[dict[str, Any]]:
    """K×H×W bool masks as COCO's compressed RLEs: what an evaluation keeps
    of each image until it is scored, a few hundred bytes a mask rather than
    H×W."""
    array = np.asfortranarray(masks.cpu().numpy().transpose(1, 2, 0).astype(np.uint8))
    return coco_mask.encode(array) if len(masks) else []


def _decoded(rles: list[dict[str, Any]], shape: tuple[int, int]) -> torch.Tensor:
    if not rles:
        return torch.zeros((0, *shape), dtype=torch.bool)
    return torch.from_numpy(decoded(rles).transpose(2, 0, 1).copy())


def mean_average_precision(iou_type: str | tuple[str, ...] = ("bbox", "segm"), **options: Any) -> MeanAveragePrecision:
    """torchmetrics' mAP of masks and of boxes (faster-coco-eval), on the
    values given to the process that computes it."""
    return MeanAveragePrecision(box_format="xyxy", iou_type=iou_type, backend="faster_coco_eval",
                                sync_on_compute=False, **options)


def mask_overlaps(found: dict[str, Any], known: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each detection's mask IoU with each object and crowd region of the
    truth (D×T), and the share of the detection's mask each covers (D×T),
    from their RLEs (pycocotools: a crowd's IoU is that share)."""
    shape = (len(found["labels"]), len(known["labels"]))
    if not all(shape):
        return torch.zeros(shape), torch.zeros(shape)
    iou = coco_mask.iou(found["masks"], known["masks"], [0] * shape[1])
    covered = coco_mask.iou(found["masks"], known["masks"], [1] * shape[1])
    return torch.as_tensor(np.asarray(iou), dtype=torch.float32), torch.as_tensor(np.asarray(covered),
                                                                                  dtype=torch.float32)


class Evaluation:
    """The validation loss (Mask R-CNN's losses on the split) and mask and
    box mAP. Each image's detections and truth are kept on the CPU, masks as
    RLEs; ``compute`` gathers every process's and scores them all in each."""

    def __init__(self, device: torch.device) -> None:
        self.loss = MeanMetric(nan_strategy="disable").to(device)
        self.images: list[tuple[dict[str, Any], dict[str, Any], tuple[int, int]]] = []

    def update(self, outputs: tuple[list[dict[str, torch.Tensor]], torch.Tensor], targets: torch.Tensor) -> None:
        detections, loss = outputs
        self.loss.update(loss.float(), weight=len(targets))
        shape = (int(targets.shape[1]), int(targets.shape[2]))
        self.images += [(detected(found), truth(stored), shape) for found, stored in zip(detections, targets,
                                                                                        strict=True)]

    @property
    def found(self) -> list[dict[str, Any]]:
        """This process's images' detections (masks as RLEs), for the report."""
        return [found for found, _, _ in self.images]

    @property
    def truth(self) -> list[dict[str, Any]]:
        return [known for _, known, _ in self.images]

    def compute(self) -> dict[str, float]:
        """A collective, and a host-device sync."""
        loss = float(self.loss.compute())
        images = self.images
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            shares: list[Any] = [None] * dist.get_world_size()
            dist.all_gather_object(shares, images)
            images = [image for share in shares for image in share]
        result = _scored(images, mean_average_precision())
        return {"loss": loss, "mask_map50": float(result["segm_map_50"]), "mask_map": float(result["segm_map"]),
                "box_map50": float(result["bbox_map_50"])}

    def detailed(self) -> dict[str, Any]:
        """This process's images' masks scored with the per-class figures and
        the precision arrays, for the evaluation report of one process (the
        masks' figures by their own names, as detection's report reads a
        detector's), and the boxes' mAP@0.5 as ``box_map50``."""
        result = _scored(self.images, mean_average_precision(class_metrics=True, extended_summary=True))
        masks = {name.removeprefix("segm_"): value for name, value in result.items() if name.startswith("segm_")}
        return {**masks, "classes": result["classes"], "box_map50": result["bbox_map_50"]}


def _scored(images: list[tuple[dict[str, Any], dict[str, Any], tuple[int, int]]],
            metric: MeanAveragePrecision) -> dict[str, Any]:
    for found, known, shape in images:  # one image's masks decoded at a time
        metric.update([{**found, "masks": _decoded(found["masks"], shape)}],
                      [{**known, "masks": _decoded(known["masks"], shape)}])
    return metric.compute()


class Training:
    def __init__(self, task: Task, classes: int, config: dict[str, Any]) -> None:
        self.task, self.classes = task, classes
        if chosen := task.refused(config):
            shown = ", ".join(f"{name} = {config[name]}" for name in chosen)
            reasons = "; ".join(dict.fromkeys(chosen.values()))
            raise ValueError(f"An instance segmentation run cannot use {shown}: {reasons}.")

    def build(self, network: dict[str, Any], channels: int, classes: int, height: int, width: int) -> torch.nn.Module:
        """The catalogue's Mask R-CNN ``network["name"]`` for ``classes``
        classes and the background, untrained, resizing to the dataset's size."""
        name = network.get("name") if network.get("source") == "standard" else None
        if name not in BUILDERS:
            raise NetworkError("An instance segmentation model is one of its networks: "
                               + ", ".join(info.label for info in INSTANCE_NETWORKS.values()) + ".")
        if channels != 3:
            raise NetworkError(f"{INSTANCE_NETWORKS[name].label} takes colour images: build the dataset with "
                               f"3 channels, not {channels}.")
        return BUILDERS[name](num_classes=classes + 1, image_mean=[0.0] * 3, image_std=[1.0] * 3,
                              min_size=min(height, width), max_size=max(height, width))

    def backbone_weights(self, network: dict[str, Any], model: torch.nn.Module,
                         weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return backbones.backbone_weights(INSTANCE_NETWORKS[network["name"]], model, weights, BACKBONE)

    def loss(self, net: torch.nn.Module, x: torch.Tensor,
             y: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The sum of Mask R-CNN's losses, and each (its box head's, its
        proposals', and ``loss_mask``)."""
        losses = net(list(x), learned(y))
        return sum(losses.values()), {name: value.detach() for name, value in losses.items()}

    def follow(self, targets: torch.Tensor, moved: Moved) -> torch.Tensor:
        """The objects gathered at the positions the images' pixels were,
        then resampled by nearest neighbour on the grid the pixels were: no
        object where a pixel came from outside the image."""
        if moved.positions is not None:
            targets = take(targets, None, moved.positions)
        if moved.grid is None:
            return targets
        channels = targets.permute(0, 3, 1, 2).to(moved.grid.dtype)
        sampled = F.grid_sample(channels, moved.grid, mode="nearest", padding_mode="zeros", align_corners=False)
        return sampled.permute(0, 2, 3, 1).to(torch.uint8)

    def predict(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                views: Predictor) -> tuple[list[dict[str, torch.Tensor]], torch.Tensor]:
        """The detections (``boxes``, ``scores``, ``labels``, ``masks``) and
        the batch's loss (``losses_mode``)."""
        detections = model(list(x))
        with losses_mode(model):
            losses = model(list(x), learned(y))
        return detections, sum(losses.values())

    def evaluation(self, device: torch.device) -> Evaluation:
        return Evaluation(device)

    def split_report(self, model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]], total: int,
                     names: list[str], image_names: Sequence[str], progress: Callable[[int, int], None],
                     score_threshold: float = SCORE_THRESHOLD) -> SplitReport:
        """The evaluation job's report of a split: detection's
        (``detection_report``), its detections matched to the objects by
        their masks and its mAP the masks', beside its boxes' mAP@0.5
        (``box_map50``); the report says so (``matched_by``)."""
        made = detection_report.split_report(self, model, batches, total, names, image_names, progress,
                                             score_threshold, overlaps=mask_overlaps, truth_shown=boxes_shown,
                                             extra=("box_map50",))
        # Its figures by the task's own metric names too, as lists and a group's Compare read them.
        named = {"mask_map50": made.report["map50"], "mask_map": made.report["map"],
                 "box_map50": made.report["box_map50"]}
        made.report.update(matched_by="masks", **named)
        made.summary.update(named)
        return made

    file_images = staticmethod(instance_files.file_images)

    def describe(self, metrics: dict[str, float]) -> str:
        shown = ", ".join(f"{metric.label} {metrics[metric.field]:.2%}" for metric in self.task.metrics)
        return f"loss {metrics['loss']:.4f}, {shown}"
