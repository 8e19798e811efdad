"""The baseline of ``bench/segmentation_overhead.py``: the segmentation
recipe the app's job trains, written by hand in the shape of torchvision's
reference segmentation script (``references/segmentation/train.py``:
``train_one_epoch`` with a per-pixel cross-entropy that ignores 255, each
step's loss logged; ``evaluate`` with a confusion matrix and its mIoU per
epoch; a checkpoint of model and optimiser after each epoch), on the app's
packed dataset: its raw store read whole into memory as uint8, each batch
gathered, converted to float, mean pixel subtracted, flipped with its masks.

    python bench/plain_segmentation.py DATASET_DIR OUT_DIR RECIPE_JSON

RECIPE_JSON holds ``network`` (``unet``, or a torchvision segmentation
builder's name), ``epochs``, ``batch``, ``lr`` (AdamW, weight decay 1e-4, a
fixed rate, torch's fused kernel as the app's solvers use it), ``flip``
(``horizontal`` or ``none``), ``precision``, ``channels_last`` (the
network and its batches in that memory layout, as the app's option puts
them; else both contiguous, as the app's default) and ``warmup_steps``. The U-Net
is the app's own module (``trainer/networks/unet.py``: the network is not
what is measured); torchvision's are built with ``weights=None``. The
allocator is set as the trainer sets it (``trainer.hostmemory``).

Prints one JSON line: the torch threads, the training seconds and images
per second without the first ``warmup_steps`` batches, and the final
validation mIoU.
"""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plain_train import Clock, fit, print_result  # noqa: E402  (the classification baseline's, beside this file)

from trainer import jobfiles  # noqa: E402
from trainer.hostmemory import keep_freed_memory  # noqa: E402
from trainer.networks.unet import UNet  # noqa: E402

IGNORE = 255


def load(folder: Path, split: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    images = torch.from_numpy(np.load(folder / f"{split}-images.npy")).to(device)
    masks = torch.from_numpy(np.load(folder / f"{split}-masks.npy")).to(device)
    return images, masks


def batch_of(images, masks, index, mean, flip: bool, layout: torch.memory_format) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch in the memory ``layout`` the run chose (``permute`` alone leaves the pixels NHWC in memory)."""
    x = (images[index].permute(0, 3, 1, 2).float().div_(255) - mean).contiguous(memory_format=layout)
    y = masks[index].long()
    if flip:
        flipped = torch.rand(len(x), device=x.device) < 0.5
        x = torch.where(flipped[:, None, None, None], x.flip(3), x)
        y = torch.where(flipped[:, None, None], y.flip(2), y)
    return x, y


def network(name: str, channels: int, classes: int) -> torch.nn.Module:
    if name == "unet":
        return UNet(channels, classes)
    built = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, num_classes=classes,
                                                            aux_loss=False)

    class Out(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = built

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)["out"]

    return Out()


def train_one_epoch(model, optimizer, images, masks, mean, recipe, autocast, clock, layout) -> None:
    model.train()
    batch = recipe["batch"]
    order = torch.randperm(len(images), device=images.device)
    for i in range(len(images) // batch):
        x, y = batch_of(images, masks, order[i * batch:(i + 1) * batch], mean, recipe["flip"] == "horizontal",
                        layout)
        with autocast:
            loss = F.cross_entropy(model(x).float(), y, ignore_index=IGNORE)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        clock.step_done(loss.item())  # the reference logs each step's loss


def evaluate(model, images, masks, mean, batch, autocast, classes: int, layout) -> float:
    model.eval()
    confusion = torch.zeros(classes, classes, dtype=torch.long, device=images.device)
    with torch.inference_mode(), autocast:
        for i in range(0, len(images), batch):
            x, y = batch_of(images, masks, torch.arange(i, min(i + batch, len(images))), mean, False, layout)
            predicted = model(x).argmax(dim=1)
            labelled = y != IGNORE
            confusion += torch.bincount(y[labelled] * classes + predicted[labelled],
                                        minlength=classes * classes).reshape(classes, classes)
    hits, truth, said = confusion.diag().double(), confusion.sum(1).double(), confusion.sum(0).double()
    seen = truth + said > 0
    return float((hits[seen] / (truth + said - hits)[seen]).mean())


def main(dataset: str, out_dir: str, recipe_json: str) -> None:
    recipe = json.loads(recipe_json)
    keep_freed_memory()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True
    folder, out = Path(dataset), Path(out_dir)
    manifest = json.loads((folder / jobfiles.MANIFEST).read_text())
    channels, classes = manifest["image_shape"][2], len(manifest["classes"])
    train_x, train_y = load(folder, "train", device)
    val_x, val_y = load(folder, "val", device)
    mean = torch.from_numpy(np.load(folder / "mean.npy")).float().to(device).mean(dim=(0, 1))[:, None, None] / 255
    torch.manual_seed(0)
    layout = torch.channels_last if recipe.get("channels_last") else torch.contiguous_format
    model = network(recipe["network"], channels, classes).to(device, memory_format=layout)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=1e-4, fused=True)
    epochs, batch = recipe["epochs"], recipe["batch"]
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(recipe["precision"])
    autocast = torch.autocast(device.type, dtype=dtype) if dtype else nullcontext()
    clock = Clock(min(recipe["warmup_steps"], epochs * (len(train_x) // batch) // 2), device)
    found = fit(clock, epochs,
                lambda: train_one_epoch(model, optimizer, train_x, train_y, mean, recipe, autocast, clock, layout),
                lambda: evaluate(model, val_x, val_y, mean, batch, autocast, classes, layout),
                lambda epoch: {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, out)
    print_result(clock, batch, "val_miou", found)


if __name__ == "__main__":
    main(*sys.argv[1:4])
