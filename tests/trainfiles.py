"""Tiny generated image datasets for training tests: bars of four
orientations at random places, with noise, written as a built dataset folder
(the raw store, manifest, mean image) the way the dataset build writes one."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from trainer import jobfiles
from trainer.datastore import EncodedSplitWriter, RawSplitWriter, encode
from trainer.targets import ClassLabels

CLASSES = ("horizontal", "vertical", "diagonal", "antidiagonal")


def bars(label: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """One size×size grayscale image of class ``label``."""
    image = rng.normal(40, 20, (size, size))
    offset = int(rng.integers(-size // 4, size // 4 + 1))
    index = np.arange(size)
    if label == 0:
        image[size // 2 + offset - 1:size // 2 + offset + 2, :] += 180
    elif label == 1:
        image[:, size // 2 + offset - 1:size // 2 + offset + 2] += 180
    else:
        columns = (index + offset) % size if label == 2 else (size - 1 - index + offset) % size
        for width in (-1, 0, 1):
            image[index, (columns + width) % size] += 180
    return np.clip(image, 0, 255).astype(np.uint8)[:, :, None]


Draw = Callable[[int, int, np.random.Generator], np.ndarray]


def make_dataset(folder: Path, per_class: dict[str, int] | None = None, size: int = 28, seed: int = 0,
                 draw: Draw = bars, classes: Sequence[str] = CLASSES, channels: int = 1,
                 encoding: str = "none") -> Path:
    """A dataset folder with train/val/test splits; returns the folder.
    ``draw(label, size, rng)`` makes one size×size×channels image (the bars
    by default, four classes, grayscale); ``encoding`` is the store's
    (``none`` raw, or ``png``/``jpeg`` as the dataset build writes them)."""
    per_class = per_class or {"train": 120, "val": 30, "test": 30}
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    shape = (size, size, channels)
    splits = {}
    mean = np.zeros(shape)
    for split in ("train", "val", "test"):
        count = per_class.get(split, 0) * len(classes)
        labels = np.arange(count) % len(classes)
        rng.shuffle(labels)
        images = np.stack([draw(int(label), size, rng) for label in labels]) if count else None
        if images is not None and split == "train":
            mean = images.mean(axis=0)
        _write_split(folder, split, shape, labels, images, encoding)
        splits[split] = {"count": int(count), "per_class": [int((labels == k).sum()) for k in range(len(classes))]}
    np.save(folder / "mean.npy", mean.astype(np.float32))
    manifest = {"version": 1, "options": {}, "classes": list(classes), "image_shape": list(shape), "encoding": encoding,
                "splits": splits, "skipped": {"total": 0, "per_class": {}}, "warnings": [], "mean": None,
                "seconds": 0.0, "files": {}}
    (folder / jobfiles.MANIFEST).write_text(json.dumps(manifest))
    (folder / "labels.txt").write_text("".join(f"{name}\n" for name in classes))
    return folder


def _write_split(folder: Path, split: str, shape: tuple[int, int, int], labels: np.ndarray,
                 images: np.ndarray | None, encoding: str) -> None:
    if encoding != "none":
        writer = EncodedSplitWriter(folder, split, shape, len(labels), ClassLabels(), encoding, 90)
        for label, pixels in zip(labels, images if images is not None else [], strict=True):
            writer.add(encode(pixels, encoding, 90), int(label))
        writer.close()
        return
    writer = RawSplitWriter(folder, split, shape, len(labels), ClassLabels())
    if images is not None:
        with open(writer.path, "r+b") as handle:
            handle.seek(writer.header_length)
            handle.write(images.tobytes())
    for slot, label in enumerate(labels):
        writer.mark(slot, int(label))
    writer.close()


def train_config(dataset_dir: Path, **overrides) -> dict:
    """Training params as the New model form makes them, for LeNet on the bars."""
    config = {
        "dataset": 1, "dataset_dir": str(dataset_dir),
        "network": {"source": "standard", "name": "lenet"}, "pretrained": None,
        "epochs": 3, "val_interval": 1.0, "snapshot_interval": 1.0, "seed": 7,
        "batch_size": 32, "batch_accumulation": 1,
        "solver": "nesterov", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0001,
        "lr_policy": {"name": "cosine", "warmup_percent": 0.0}, "scale_lr": True, "batch_schedule": [],
        "mean": "image", "crop": None, "translate": 0, "flip": "none", "rotation": 0.0, "scale": 0.0,
        "noise": 0.0, "color_jitter": 0.0, "label_smoothing": 0.0,
        "precision": "fp32", "channels_last": False, "compile": False, "early_stopping": None,
    }
    config.update(overrides)
    return config


def evaluation_run(model: Path, job: Path, source: dict, roots: Sequence[Path] = (),
                   **report_options) -> tuple[int, Path]:
    """The evaluation job run in this process, on one thread, on ``source``
    with the model trained in ``model / "run"``: its exit code and output folder."""
    import torch

    from trainer.evaluation_files import OUTPUT
    from trainer.inference.job import main

    job.mkdir(parents=True)
    config = {"model_dir": str(model / "run"), "snapshot": None, "source": source, "top_n": 5,
              "roots": [str(root) for root in roots], "report_options": report_options}
    (job / jobfiles.CONFIG).write_text(json.dumps(config))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return main(str(job / jobfiles.CONFIG)), job / OUTPUT
    finally:
        torch.set_num_threads(threads)


def error_of(job: Path) -> str:
    """The message of the job's last error event."""
    from trainer import eventkinds, eventlog

    return [e for e in eventlog.read_all(job) if e["kind"] == eventkinds.ERROR][-1]["data"]["message"]
