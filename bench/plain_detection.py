"""The baseline of ``bench/detection_overhead.py``: the detection recipe the
app's job trains, written by hand in the shape of torchvision's reference
detection script (``references/detection/engine.py``: ``train_one_epoch``
giving the model a list of images and a list of target dicts and summing
its loss dict; ``evaluate`` with a COCO-style mAP per epoch; a checkpoint of
model and optimiser after each epoch), on the app's packed dataset: its raw
store read whole into memory as uint8, each batch gathered, converted to
float, mean pixel subtracted, flipped with its boxes per step.

    python bench/plain_detection.py DATASET_DIR OUT_DIR RECIPE_JSON

RECIPE_JSON holds ``network`` (a torchvision detector builder's name),
``epochs``, ``batch``, ``lr`` (AdamW, weight decay 1e-4, a fixed rate,
torch's fused kernel as the app's solvers use it),
``flip`` (``horizontal`` or ``none``), ``precision`` and ``warmup_steps``.
The detector is built as a person would, from torchvision with
``weights=None``, and told the dataset's size and to leave the pixels'
normalisation to the loop, as the app builds it. The allocator is set as
the trainer sets it (``trainer.hostmemory``).

Prints one JSON line: the torch threads, the training seconds and images
per second without the first ``warmup_steps`` batches, and the final
validation mAP@0.5.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plain_train import Clock, fit, print_result  # noqa: E402  (the classification baseline's, beside this file)

from trainer import jobfiles  # noqa: E402
from trainer.hostmemory import keep_freed_memory  # noqa: E402

FIXED_SIZE = ("ssdlite320_mobilenet_v3_large", "ssd300_vgg16")  # resize to their own input


def load(folder: Path, split: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    images = torch.from_numpy(np.load(folder / f"{split}-images.npy")).to(device)
    boxes = torch.from_numpy(np.load(folder / f"{split}-boxes.npy")).to(device)
    return images, boxes


def targets_of(rows: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """Each image's objects (class ≥ 0, no flag: not difficult, not an ignore region)."""
    kept = (rows[..., 4] >= 0) & (rows[..., 5] == 0)
    return [{"boxes": image[keep][:, :4], "labels": image[keep][:, 4].long() + 1} for image, keep in zip(rows, kept, strict=True)]


def batch_of(images, boxes, index, mean, flip: bool) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
    x = images[index].permute(0, 3, 1, 2).float().div_(255) - mean
    rows = boxes[index].clone()
    if flip:
        width = x.shape[3]
        flipped = torch.rand(len(x), device=x.device) < 0.5
        x = torch.where(flipped[:, None, None, None], x.flip(3), x)
        x1 = torch.where(flipped[:, None], width - rows[..., 2], rows[..., 0])
        x2 = torch.where(flipped[:, None], width - rows[..., 0], rows[..., 2])
        rows[..., 0], rows[..., 2] = x1, x2
    return list(x), targets_of(rows)


def train_one_epoch(model, optimizer, images, boxes, mean, recipe, autocast, clock) -> None:
    model.train()
    batch = recipe["batch"]
    order = torch.randperm(len(images), device=images.device)
    for i in range(len(images) // batch):
        inputs, targets = batch_of(images, boxes, order[i * batch:(i + 1) * batch], mean, recipe["flip"] == "horizontal")
        with autocast:
            loss_dict = model(inputs, targets)
            losses = sum(loss for loss in loss_dict.values())
        optimizer.zero_grad(set_to_none=True)
        losses.backward()
        optimizer.step()
        clock.step_done(losses.item())  # the reference logs each step's loss


def evaluate(model, images, boxes, mean, batch, autocast) -> float:
    model.eval()
    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="faster_coco_eval")
    with torch.inference_mode(), autocast:
        for i in range(0, len(images), batch):
            inputs, targets = batch_of(images, boxes, torch.arange(i, min(i + batch, len(images))), mean, False)
            found = model(inputs)
            metric.update([{k: v.float().cpu() if k != "labels" else v.cpu() for k, v in f.items()} for f in found],
                          [{k: v.cpu() for k, v in t.items()} for t in targets])
    return float(metric.compute()["map_50"])


def main(dataset: str, out_dir: str, recipe_json: str) -> None:
    recipe = json.loads(recipe_json)
    keep_freed_memory()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    folder, out = Path(dataset), Path(out_dir)
    manifest = json.loads((folder / jobfiles.MANIFEST).read_text())
    height, width, _ = manifest["image_shape"]
    train_x, train_b = load(folder, "train", device)
    val_x, val_b = load(folder, "val", device)
    mean = torch.from_numpy(np.load(folder / "mean.npy")).float().to(device).mean(dim=(0, 1))[:, None, None] / 255
    torch.manual_seed(0)
    options = {"weights": None, "weights_backbone": None, "num_classes": len(manifest["classes"]) + 1,
               "image_mean": [0.0] * 3, "image_std": [1.0] * 3}
    if recipe["network"] not in FIXED_SIZE:
        options.update(min_size=min(height, width), max_size=max(height, width))
    model = getattr(torchvision.models.detection, recipe["network"])(**options).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=1e-4, fused=True)
    epochs, batch = recipe["epochs"], recipe["batch"]
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(recipe["precision"])
    autocast = torch.autocast(device.type, dtype=dtype) if dtype else nullcontext()
    clock = Clock(min(recipe["warmup_steps"], epochs * (len(train_x) // batch) // 2), device)
    found = fit(clock, epochs, lambda: train_one_epoch(model, optimizer, train_x, train_b, mean, recipe, autocast, clock),
                lambda: evaluate(model, val_x, val_b, mean, batch, autocast),
                lambda epoch: {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, out)
    print_result(clock, batch, "val_map50", found)


if __name__ == "__main__":
    main(*sys.argv[1:4])
