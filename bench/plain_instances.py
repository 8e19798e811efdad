"""The baseline of ``bench/instance_overhead.py``: the instance segmentation
recipe the app's job trains, written by hand in the shape of torchvision's
reference detection script (``references/detection/engine.py``, which
trains Mask R-CNN too: ``train_one_epoch`` giving the model a list of images
and a list of target dicts with ``masks``, and summing its loss dict;
``evaluate`` with COCO's mask mAP per epoch; a checkpoint of model and
optimiser after each epoch), on the app's packed dataset: its raw store read
whole into memory as uint8 (each pixel's class and object number), each
batch gathered, converted to float, mean pixel subtracted, flipped with its
objects, and each image's objects turned into masks, boxes and labels.

    python bench/plain_instances.py DATASET_DIR OUT_DIR RECIPE_JSON

RECIPE_JSON as ``bench/plain_detection.py``'s; ``network`` is
``maskrcnn_mobilenet_v3_large_fpn`` (built here as torchvision builds its
Faster R-CNN on that backbone, with Mask R-CNN's heads: torchvision has no
builder of it) or a torchvision Mask R-CNN builder's name.

Prints one JSON line: the torch threads, the training seconds and images
per second without the first ``warmup_steps`` batches, and the final
validation mask mAP@0.5.
"""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torchvision
from torchmetrics.detection import MeanAveragePrecision
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import _mobilenet_extractor
from torchvision.ops import masks_to_boxes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plain_train import Clock, fit, print_result  # noqa: E402  (the classification baseline's, beside this file)

from trainer import jobfiles  # noqa: E402
from trainer.hostmemory import keep_freed_memory  # noqa: E402


def load(folder: Path, split: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    images = torch.from_numpy(np.load(folder / f"{split}-images.npy")).to(device)
    objects = torch.from_numpy(np.load(folder / f"{split}-instances.npy")).to(device)
    return images, objects


def targets_of(objects: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """Each image's objects (numbers 1 to 254; 255 is a crowd region, 0 none)."""
    found = []
    for image in objects:
        numbers = image[..., 1]
        present = torch.unique(numbers)
        present = present[(present > 0) & (present < 255)]
        masks = numbers[None] == present[:, None, None]
        labels = (image[..., 0][None] * masks).flatten(1).amax(dim=1).long()
        boxes = masks_to_boxes(masks).float() + torch.tensor([0.0, 0.0, 1.0, 1.0], device=masks.device)
        found.append({"boxes": boxes, "labels": labels, "masks": masks.to(torch.uint8)})
    return found


def batch_of(images, objects, index, mean, flip: bool) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
    x = images[index].permute(0, 3, 1, 2).float().div_(255) - mean
    found = objects[index]
    if flip:
        flipped = torch.rand(len(x), device=x.device) < 0.5
        x = torch.where(flipped[:, None, None, None], x.flip(3), x)
        found = torch.where(flipped[:, None, None, None], found.flip(2), found)
    return list(x), targets_of(found)


def train_one_epoch(model, optimizer, images, objects, mean, recipe, autocast, clock) -> None:
    model.train()
    batch = recipe["batch"]
    order = torch.randperm(len(images), device=images.device)
    for i in range(len(images) // batch):
        inputs, targets = batch_of(images, objects, order[i * batch:(i + 1) * batch], mean,
                                   recipe["flip"] == "horizontal")
        with autocast:
            loss_dict = model(inputs, targets)
            losses = sum(loss for loss in loss_dict.values())
        optimizer.zero_grad(set_to_none=True)
        losses.backward()
        optimizer.step()
        clock.step_done(losses.item())  # the reference logs each step's loss


def evaluate(model, images, objects, mean, batch, autocast) -> float:
    model.eval()
    metric = MeanAveragePrecision(box_format="xyxy", iou_type="segm", backend="faster_coco_eval")
    with torch.inference_mode(), autocast:
        for i in range(0, len(images), batch):
            inputs, targets = batch_of(images, objects, torch.arange(i, min(i + batch, len(images))), mean, False)
            found = model(inputs)
            metric.update([{"masks": f["masks"][:, 0].cpu() >= 0.5, "scores": f["scores"].float().cpu(),
                            "labels": f["labels"].cpu()} for f in found],
                          [{"masks": t["masks"].bool().cpu(), "labels": t["labels"].cpu()} for t in targets])
    return float(metric.compute()["map_50"])


def mask_rcnn(name: str, classes: int, height: int, width: int) -> torch.nn.Module:
    options = {"num_classes": classes + 1, "image_mean": [0.0] * 3, "image_std": [1.0] * 3,
               "min_size": min(height, width), "max_size": max(height, width)}
    if name != "maskrcnn_mobilenet_v3_large_fpn":
        return getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None, **options)
    backbone = _mobilenet_extractor(torchvision.models.mobilenet_v3_large(weights=None), True, 6)
    sizes = ((32, 64, 128, 256, 512),) * 3
    return MaskRCNN(backbone, rpn_anchor_generator=AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * 3),
                    rpn_score_thresh=0.05, **options)


def main(dataset: str, out_dir: str, recipe_json: str) -> None:
    recipe = json.loads(recipe_json)
    keep_freed_memory()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    folder, out = Path(dataset), Path(out_dir)
    manifest = json.loads((folder / jobfiles.MANIFEST).read_text())
    height, width, _ = manifest["image_shape"]
    train_x, train_o = load(folder, "train", device)
    val_x, val_o = load(folder, "val", device)
    mean = torch.from_numpy(np.load(folder / "mean.npy")).float().to(device).mean(dim=(0, 1))[:, None, None] / 255
    torch.manual_seed(0)
    model = mask_rcnn(recipe["network"], len(manifest["classes"]), height, width).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=1e-4, fused=True)
    epochs, batch = recipe["epochs"], recipe["batch"]
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(recipe["precision"])
    autocast = torch.autocast(device.type, dtype=dtype) if dtype else nullcontext()
    clock = Clock(min(recipe["warmup_steps"], epochs * (len(train_x) // batch) // 2), device)
    found = fit(clock, epochs, lambda: train_one_epoch(model, optimizer, train_x, train_o, mean, recipe, autocast, clock),
                lambda: evaluate(model, val_x, val_o, mean, batch, autocast),
                lambda epoch: {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, out)
    print_result(clock, batch, "val_mask_map50", found)


if __name__ == "__main__":
    main(*sys.argv[1:4])
