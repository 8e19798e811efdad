"""Synthetic segmentation sources made in the tests: images of discs and
rectangles on noise, each shape a class, with their label images saved as
palette PNGs, gray levels or colours, and an ignore border around each
shape as VOC draws one."""

from __future__ import annotations

import io
import json
from functools import partial
from pathlib import Path

import numpy as np
from PIL import Image

from tests.sharedruns import made_once
from trainer.segmentation.labels import voc_colours

SIZE = (64, 48)  # the source images' width and height
CLASSES = ("background", "disc", "box")
# The gray level each class is painted in on the images (the noise stays below 40).
SHADES = (20, 150, 235)
COLOURS = ((0, 0, 0), (200, 30, 30), (30, 200, 30))


def scene(seed: int, size: tuple[int, int] = SIZE, border: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """An image (H×W×3 uint8) and its classes (H×W uint8): a disc of class 1
    and a rectangle of class 2 over a noisy background of class 0, placed
    by ``seed``; with ``border``, a band of that many pixels around each
    shape holds 255 (ignore) in the classes."""
    rng = np.random.default_rng(seed)
    width, height = size
    ys, xs = np.mgrid[:height, :width]
    classes = np.zeros((height, width), dtype=np.uint8)
    cx, cy, radius = rng.integers(width // 4, 3 * width // 4), rng.integers(height // 4, 3 * height // 4), height // 5
    disc = (xs - cx) ** 2 + (ys - cy) ** 2 <= radius**2
    x1, y1 = rng.integers(0, width // 2), rng.integers(0, height // 2)
    box = (xs >= x1) & (xs < x1 + width // 3) & (ys >= y1) & (ys < y1 + height // 3)
    classes[box] = 2
    classes[disc] = 1
    if border:
        edge = np.zeros_like(disc)
        for dy in range(-border, border + 1):
            for dx in range(-border, border + 1):
                edge |= np.roll(np.roll(classes, dy, 0), dx, 1) != classes
        classes[edge] = 255
    pixels = rng.integers(0, 40, (height, width, 3), dtype=np.uint8)
    for index, shade in enumerate(SHADES[1:], start=1):
        pixels[classes == index] = shade
    return pixels, classes


def png(pixels: np.ndarray) -> bytes:
    """An H×W array as a grayscale PNG, an H×W×3 one as RGB."""
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def palette_png(classes: np.ndarray) -> bytes:
    """Classes as a palette PNG with VOC's colours, as VOC stores them."""
    image = Image.frombytes("P", classes.shape[::-1], classes.tobytes())
    image.putpalette([c for colour in voc_colours() for c in colour])
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def colour_png(classes: np.ndarray, colours: tuple[tuple[int, int, int], ...] = COLOURS,
               ignore: tuple[int, int, int] = (255, 255, 255)) -> bytes:
    """Classes as an RGB image of ``colours``, 255 as ``ignore``."""
    table = np.array([*colours, *[ignore] * (256 - len(colours))], dtype=np.uint8)
    table[255] = ignore
    return png(table[classes])


def colour_map(colours: tuple[tuple[int, int, int], ...] = COLOURS, names: tuple[str, ...] = CLASSES) -> str:
    return "".join(f"{r} {g} {b} {name}\n" for (r, g, b), name in zip(colours, names, strict=True))


def folders_source(root: Path, count: int, labels: str = "palette", size: tuple[int, int] = SIZE,
                   border: int = 0, image_format: str = "PNG") -> dict[str, np.ndarray]:
    """``images/`` and ``labels/`` of ``count`` scenes (``labels``: palette,
    gray or colour); the classes of each by its name."""
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    made = {}
    for number in range(count):
        pixels, classes = scene(number, size, border)
        name = f"scene{number:03d}"
        suffix = ".png" if image_format == "PNG" else ".jpg"
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, format=image_format, **({"quality": 95} if image_format == "JPEG" else {}))
        (root / "images" / f"{name}{suffix}").write_bytes(out.getvalue())
        label = {"palette": palette_png, "gray": png, "colour": colour_png}[labels](classes)
        (root / "labels" / f"{name}.png").write_bytes(label)
        made[name] = classes
    return made


# A segmentation build's config (the source is added).
BUILD_CONFIG = {"task": "segmentation", "channels": 3, "width": 32, "height": 24, "resize_mode": "squash",
                "val_percent": 25, "test_percent": 0, "encoding": "png", "quality": 90, "seed": 3, "mean": True,
                "layout": "auto", "label_type": "auto", "colour_map": "", "class_names": "\n".join(CLASSES),
                "ignore_value": 255, "binary": "auto", "placing": {"pad_width": None, "pad_height": None}}


def make_segmentation_dataset(folder: Path, count: int = 8, border: int = 1) -> dict[str, np.ndarray]:
    """A dataset of ``count`` scenes (palette labels, an ignore border) built
    by the real build into ``folder`` (a dataset job's ``dataset/``), its
    source beside the job's folder; the source's classes by image name."""
    from trainer.dataset_build import main

    job = folder.parent
    source = job.parent / f"{job.name}-source"
    made = folders_source(source, count, border=border)
    job.mkdir(parents=True, exist_ok=True)
    (job / "config.json").write_text(json.dumps({**BUILD_CONFIG, "source": {"type": "folder", "path": str(source)}}))
    if main(str(job / "config.json")) != 0:
        raise AssertionError((job / "events.jsonl").read_text()[-2000:])
    return made


def built_scenes(root: Path, count: int = 96, **build) -> Path:
    """``count`` scenes (palette labels, an ignore border) built at 32×24,
    raw, a quarter for validation, under ``root``; the built dataset's folder.
    Their source is ``root/source`` (64×48 PNGs in ``images/``); ``build``
    overrides the build's options (``BUILD_CONFIG``)."""
    from trainer.dataset_build import main

    folders_source(root / "source", count, border=1)
    job = root / "build"
    job.mkdir()
    (job / "config.json").write_text(json.dumps({**BUILD_CONFIG, "encoding": "none", **build,
                                                 "source": {"type": "folder", "path": str(root / "source")}}))
    if main(str(job / "config.json")) != 0:
        raise AssertionError((job / "events.jsonl").read_text()[-2000:])
    return job / "dataset"


def segmentation_config(dataset: Path, **overrides) -> dict:
    """A segmentation run's params as the New model form makes them: a U-Net, AdamW."""
    from tests.trainfiles import train_config

    options = {"network": {"source": "standard", "name": "unet"}, "task": "segmentation", "solver": "adamw",
               "lr": 0.01, "weight_decay": 0.0001, "batch_size": 16, "lr_policy": {"name": "fixed"},
               "scale_lr": False, "mean": "pixel", "seed": 3}
    return {**train_config(dataset, **{**options, **overrides}), "job_id": 1, "devices": ["cpu0"]}


def trained_segmenter(folder: Path, dataset: Path, **overrides):
    """A finished segmentation job in ``folder`` (config.json, checkpoints,
    events), trained in this process on the CPU; its ``Run``."""
    from tests.detectionfiles import CPU
    from trainer import jobfiles
    from trainer.train import Run

    folder.mkdir(parents=True, exist_ok=True)
    config = segmentation_config(dataset, **overrides)
    (folder / jobfiles.CONFIG).write_text(json.dumps(config))
    run = Run(config, folder, CPU)
    run.train()
    return run


def train_segmenter_once(root: Path, count: int = 96, epochs: int = 8) -> Path:
    """``root/build/dataset`` built of ``count`` scenes (their source in
    ``root/source``) and a U-Net trained on it for ``epochs`` in ``root/run``
    on one thread, validated and kept at the end only, with no job rows: for
    a module's tests to share through ``copied_segmenter`` (made once in
    the suite's run, see ``tests/sharedruns.py``)."""
    return made_once(f"segmenter-{count}-{epochs}", partial(_train_segmenter, count=count, epochs=epochs), root)


def _train_segmenter(root: Path, count: int, epochs: int) -> None:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trained_segmenter(root / "run", built_scenes(root, count), epochs=epochs, val_interval=float(epochs),
                          snapshot_interval=float(epochs))
    finally:
        torch.set_num_threads(threads)


def copied_segmenter(owner, trained: Path, name: str = "segmenter"):
    """A done segmentation model and its dataset's job, holding copies of what
    ``train_segmenter_once`` made."""
    import shutil

    from datasets import services as dataset_services
    from jobs.models import Job, Status
    from tests.evalfiles import copied_run

    dataset = Job.objects.create(kind="dataset", name="scenes", owner=owner, status=Status.DONE, progress=1.0,
                                 params={**BUILD_CONFIG, "encoding": "none",
                                         "source": {"type": "folder", "path": str(trained / "source")}})
    shutil.copytree(trained / "build" / "dataset", dataset_services.folder(dataset))
    return copied_run(owner, dataset, trained / "run", name)
