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
from trainer.distributed import Placement
from trainer.train import Run

CPU = Placement(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))


def trained_job(folder: Path, dataset: Path, **overrides) -> Path:
    """A finished training job in ``folder`` (config.json, checkpoints, events)."""
    config = {**train_config(dataset, **overrides), "job_id": 1, "devices": ["cpu0"]}
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    Run(config, folder, CPU).train()
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
