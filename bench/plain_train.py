"""The baseline of ``bench/train_overhead.py``: the same network on the same
packed dataset for the same epochs, as a plain PyTorch loop a person would
write by hand (whole dataset as one tensor on the device, a random
permutation per epoch, validation after every epoch).

    python bench/plain_train.py DATASET_DIR NETWORK EPOCHS BATCH LR SOLVER PRECISION WARMUP_STEPS INTERVAL_SECONDS

SOLVER is ``momentum`` or ``nesterov`` (SGD, momentum 0.9). The first
WARMUP_STEPS batches are timed apart and the rest cut into intervals of
INTERVAL_SECONDS, the trainer's (the benchmark passes them, so that this
script imports nothing of the app). Prints one JSON line: training seconds
and images per second without the warm-up, each interval's images per
second, and the final validation accuracy.

It sets the C allocator as the trainer does (``trainer.hostmemory``): with
glibc's defaults a CPU loop's step time moved by up to 10% from one run to
the next with its heap's layout, on either side, which no pairing can
average away.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.hostmemory import keep_freed_memory  # noqa: E402
from trainer.networks import build  # noqa: E402  the same network, built the same way


def load(folder: Path, split: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    images = torch.from_numpy(np.load(folder / f"{split}-images.npy")).to(device)
    labels = torch.from_numpy(np.load(folder / f"{split}-labels.npy")).long().to(device)
    return images, labels


def main(folder: str, network: str, epochs: str, batch: str, lr: str, solver: str, precision: str,
         warmup_steps: str, interval_seconds: str) -> None:
    keep_freed_memory()  # the trainer's allocator settings: without them either side's step time is a toss
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True
    folder_path = Path(folder)
    manifest = json.loads((folder_path / "manifest.json").read_text())
    height, width, channels = manifest["image_shape"]
    train_x, train_y = load(folder_path, "train", device)
    val_x, val_y = load(folder_path, "val", device)
    mean = torch.from_numpy(np.load(folder_path / "mean.npy")).to(device).permute(2, 0, 1)

    def prepare(pixels: torch.Tensor) -> torch.Tensor:
        return ((pixels.permute(0, 3, 1, 2).float() - mean) / 255).contiguous()  # N×C×H×W in memory too

    def synchronize() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    torch.manual_seed(0)
    model = build({"source": "standard", "name": network}, channels, len(manifest["classes"]), height, width).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(lr), momentum=0.9, nesterov=solver == "nesterov",
                                weight_decay=1e-4)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    autocast = torch.autocast(device.type, dtype=dtype) if dtype else nullcontext()
    batch_size, epochs_count = int(batch), int(epochs)
    steps_per_epoch = len(train_x) // batch_size
    total_steps = epochs_count * steps_per_epoch
    warmup, interval = min(int(warmup_steps), total_steps // 2), float(interval_seconds)
    step = 0
    intervals: list[tuple[int, float]] = []  # (steps, seconds) after the warm-up
    accuracy = 0.0
    for _ in range(epochs_count):
        synchronize()
        start, start_step = time.perf_counter(), step
        order = torch.randperm(len(train_x), device=device)
        model.train()
        for i in range(steps_per_epoch):
            for group in optimizer.param_groups:
                group["lr"] = float(lr) * 0.5 * (1 + np.cos(np.pi * step / total_steps))
            index = order[i * batch_size:(i + 1) * batch_size]
            with autocast:
                loss = F.cross_entropy(model(prepare(train_x[index])), train_y[index])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            now = time.perf_counter()
            if now - start >= interval or step == warmup or i == steps_per_epoch - 1:
                synchronize()
                now = time.perf_counter()
                if start_step >= warmup:
                    intervals.append((step - start_step, now - start))
                start, start_step = now, step
        model.eval()
        correct = 0
        with torch.no_grad(), autocast:
            for i in range(0, len(val_x), batch_size):
                correct += (model(prepare(val_x[i:i + batch_size])).argmax(1) == val_y[i:i + batch_size]).sum().item()
        accuracy = correct / len(val_x)
    train_seconds = sum(seconds for _, seconds in intervals)
    images = sum(steps for steps, _ in intervals) * batch_size
    print(json.dumps({"train_seconds": train_seconds, "images_per_s": images / train_seconds,
                      "interval_rates": [steps * batch_size / seconds for steps, seconds in intervals],
                      "val_top1": accuracy}))


if __name__ == "__main__":
    main(*sys.argv[1:10])
