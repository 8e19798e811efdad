"""The baseline of ``bench/train_overhead.py``: the recipe the app's job
trains, written as a person would write it by hand, in the shape of
torchvision's reference classification script (``train_one_epoch`` and
``evaluate`` per epoch, a checkpoint of model, optimiser and scheduler
after each epoch), on the app's packed dataset: its raw store read whole
into memory as uint8, each batch gathered, converted to float, flipped and
mean-subtracted per step.

    python bench/plain_train.py DATASET_DIR OUT_DIR RECIPE_JSON

RECIPE_JSON holds ``network``, ``epochs``, ``batch``, ``lr``, ``solver``
(``momentum`` or ``nesterov``: SGD, momentum 0.9, weight decay 1e-4, with
torch's fused kernel as the app's solvers use it: ``bench/optimizer_step.py``
measures that against torch's default loop),
``policy`` (``step``: the rate times ``gamma`` every ``step_percent`` of
the steps, per step as the app does; or ``cosine``), ``flip``
(``horizontal`` or ``none``), ``mean`` (``image`` or ``none``),
``precision`` and ``warmup_steps``. It imports the app's network builder
only (the same network, built the same way) and sets the C allocator as
the trainer does (``trainer.hostmemory``): with glibc's defaults a CPU
loop's step time moved by up to 10% from one run to the next with its
heap's layout, on either side.

Prints one JSON line: the torch threads, the training seconds and images
per second without the first ``warmup_steps`` batches (timed apart, as the
app times its own), and the final validation accuracy.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer import jobfiles  # noqa: E402
from trainer.hostmemory import keep_freed_memory  # noqa: E402
from trainer.networks import build  # noqa: E402


def load(folder: Path, split: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    images = torch.from_numpy(np.load(folder / f"{split}-images.npy")).to(device)
    labels = torch.from_numpy(np.load(folder / f"{split}-labels.npy")).long().to(device)
    return images, labels


class Inputs:
    """uint8 N×H×W×C pixels to the network's float N×C×H×W input."""

    def __init__(self, mean: torch.Tensor | None, flip: bool) -> None:
        self.mean, self.flip = mean, flip

    def __call__(self, pixels: torch.Tensor, train: bool) -> torch.Tensor:
        x = pixels.permute(0, 3, 1, 2).float().div_(255)
        if train and self.flip:
            flipped = torch.rand(len(x), device=x.device) < 0.5
            x = torch.where(flipped[:, None, None, None], x.flip(3), x)
        if self.mean is not None:
            x = x - self.mean
        return x.contiguous()


def train_one_epoch(model, criterion, optimizer, scheduler, images, labels, inputs, batch, autocast, clock) -> None:
    model.train()
    order = torch.randperm(len(images), device=images.device)
    for i in range(len(images) // batch):
        index = order[i * batch:(i + 1) * batch]
        image, target = inputs(images[index], train=True), labels[index]
        with autocast:
            output = model(image)
            loss = criterion(output, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        clock.step_done(loss.item())  # the reference logs each step's loss


def evaluate(model, images, labels, inputs, batch, autocast) -> float:
    model.eval()
    correct = 0
    with torch.inference_mode(), autocast:
        for i in range(0, len(images), batch):
            correct += (model(inputs(images[i:i + batch], train=False)).argmax(1) == labels[i:i + batch]).sum().item()
    return correct / len(images)


class Clock:
    """Training time without the first ``warmup`` steps, as the app counts it."""

    def __init__(self, warmup: int, device: torch.device) -> None:
        self.warmup, self.device = warmup, device
        self.steps, self.seconds, self.started = 0, 0.0, time.perf_counter()

    def start(self) -> None:
        self.started = time.perf_counter()

    def step_done(self, loss: float) -> None:
        if not math.isfinite(loss):
            raise SystemExit(f"the loss became {loss}")
        self.steps += 1
        if self.steps == self.warmup:
            self.start()

    def stop(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        if self.steps > self.warmup:
            self.seconds += time.perf_counter() - self.started


def fit(clock: Clock, epochs: int, train_one: Callable[[], None], evaluate: Callable[[], float],
        checkpoint: Callable[[int], dict], out: Path) -> float:
    """The reference scripts' epoch loop: an epoch trained (timed by
    ``clock``), evaluated, and ``checkpoint(epoch)`` saved to ``out``; the
    last evaluation's figure."""
    found = 0.0
    for epoch in range(epochs):
        clock.start()
        train_one()
        clock.stop()
        found = evaluate()
        torch.save(checkpoint(epoch), out / "checkpoint.pth")
    return found


def print_result(clock: Clock, batch: int, metric: str, value: float) -> None:
    """The one JSON line the benchmarks read: threads, training seconds and
    images per second after the warm-up, and the final validation ``metric``."""
    images = (clock.steps - clock.warmup) * batch
    print(json.dumps({"threads": torch.get_num_threads(), "train_seconds": clock.seconds,
                      "images_per_s": images / clock.seconds, metric: value}))


def lr_factor(recipe: dict, total_steps: int):
    def factor(step: int) -> float:
        percent = 100.0 * step / total_steps
        if recipe["policy"] == "step":
            return recipe.get("gamma", 0.1) ** math.floor(percent / recipe.get("step_percent", 33.0))
        return 0.5 * (1 + math.cos(math.pi * percent / 100))
    return factor


def main(dataset: str, out_dir: str, recipe_json: str) -> None:
    recipe = json.loads(recipe_json)
    keep_freed_memory()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True
    folder, out = Path(dataset), Path(out_dir)
    manifest = json.loads((folder / jobfiles.MANIFEST).read_text())
    height, width, channels = manifest["image_shape"]
    train_x, train_y = load(folder, "train", device)
    val_x, val_y = load(folder, "val", device)
    mean = None
    if recipe["mean"] == "image":
        mean = (torch.from_numpy(np.load(folder / "mean.npy")).float().to(device) / 255).permute(2, 0, 1)
    inputs = Inputs(mean, recipe["flip"] == "horizontal")
    torch.manual_seed(0)
    model = build({"source": "standard", "name": recipe["network"]}, channels, len(manifest["classes"]), height,
                  width).to(device)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=recipe["lr"], momentum=0.9,
                                nesterov=recipe["solver"] == "nesterov", weight_decay=1e-4, fused=True)
    batch, epochs = recipe["batch"], recipe["epochs"]
    total_steps = epochs * (len(train_x) // batch)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor(recipe, total_steps))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(recipe["precision"])
    autocast = torch.autocast(device.type, dtype=dtype) if dtype else nullcontext()
    clock = Clock(min(recipe["warmup_steps"], total_steps // 2), device)
    accuracy = fit(clock, epochs,
                   lambda: train_one_epoch(model, criterion, optimizer, scheduler, train_x, train_y, inputs, batch,
                                           autocast, clock),
                   lambda: evaluate(model, val_x, val_y, inputs, batch, autocast),
                   lambda epoch: {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                  "lr_scheduler": scheduler.state_dict(), "epoch": epoch}, out)
    print_result(clock, batch, "val_top1", accuracy)


if __name__ == "__main__":
    main(*sys.argv[1:4])
