"""Trained models for the inference tests: a job folder trained in this
process by the trainer's own ``Run`` (LeNet on the generated bars by
default), as the worker would leave it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from tests.trainfiles import bars, train_config
from trainer import checkpoint, jobfiles
from trainer.datastore import RawSplitWriter
from trainer.distributed import Placement
from trainer.networks import build
from trainer.targets import ClassLabels
from trainer.train import Run

CPU = Placement(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))


def trained_job(folder: Path, dataset: Path, **overrides) -> Path:
    """A finished training job in ``folder`` (config.json, checkpoints, events)."""
    config = {**train_config(dataset, **overrides), "job_id": 1, "devices": ["cpu0"]}
    folder.mkdir(parents=True)
    (folder / jobfiles.CONFIG).write_text(json.dumps(config))
    Run(config, folder, CPU).train()
    return folder


def untrained_job(folder: Path, dataset: Path, name: str, **overrides) -> Path:
    """A job folder whose snapshot is a freshly built network (no training)
    for the images of ``dataset``; ``overrides`` of the training params (``crop``, ``mean``)."""
    config = {**train_config(dataset, network={"source": "standard", "name": name}, **overrides), "job_id": 2}
    folder.mkdir(parents=True)
    (folder / jobfiles.CONFIG).write_text(json.dumps(config))
    manifest = json.loads((dataset / jobfiles.MANIFEST).read_text())
    height, width, channels = manifest["image_shape"]
    crop = config["crop"]
    model = build(config["network"], channels, len(manifest["classes"]), crop or height, crop or width)
    checkpoint.save(folder / jobfiles.LAST_CHECKPOINT, {"model": model.state_dict()})
    return folder


def png(pixels: np.ndarray) -> bytes:
    """uint8 H×W×C (C 1 or 3) as PNG bytes."""
    image = Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def bar_images(count: int, size: int = 28, seed: int = 1) -> list[tuple[bytes, int]]:
    """``count`` new bar images as PNG bytes with their labels, the classes in turn."""
    rng = np.random.default_rng(seed)
    return [(png(bars(label % 4, size, rng)), label % 4) for label in range(count)]


def square(present: bool, size: int, rng: np.random.Generator, side: int = 6) -> tuple[np.ndarray, tuple[int, int]]:
    """A noisy size×size grayscale image, with a bright side×side square at
    a random place when ``present``; returns the image and the square's centre."""
    image = rng.normal(50, 25, (size, size))
    top, left = (int(v) for v in rng.integers(1, size - side - 1, 2))
    if present:
        image[top:top + side, left:left + side] = 250
    return np.clip(image, 0, 255).astype(np.uint8)[:, :, None], (top + side // 2, left + side // 2)


def make_square_dataset(folder: Path, per_class: int = 150, size: int = 28, seed: int = 0) -> Path:
    """A built dataset of two classes: "empty" noise and noise with a "square"."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    classes = ["empty", "square"]
    splits = {}
    for split, count in (("train", per_class * 2), ("val", 40), ("test", 0)):
        labels = np.arange(count) % 2
        writer = RawSplitWriter(folder, split, (size, size, 1), count, ClassLabels())
        if count:
            images = np.stack([square(bool(label), size, rng)[0] for label in labels])
            with open(writer.path, "r+b") as handle:
                handle.seek(writer.header_length)
                handle.write(images.tobytes())
            if split == "train":
                np.save(folder / "mean.npy", images.mean(axis=0).astype(np.float32))
        for slot, label in enumerate(labels):
            writer.mark(slot, int(label))
        writer.close()
        splits[split] = {"count": count, "per_class": [count // 2, count // 2]}
    manifest = {"version": 1, "options": {"resize_mode": "squash"}, "classes": classes,
                "image_shape": [size, size, 1], "encoding": "none", "splits": splits}
    (folder / jobfiles.MANIFEST).write_text(json.dumps(manifest))
    return folder
