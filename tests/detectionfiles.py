"""Tiny detection data and models for tests.

- ``make_detection_dataset``: a built dataset written straight with the
  store's writers and ``Boxes`` as a build leaves one (images, boxes,
  manifest with task "detection", skipped report), for the pages' tests,
  with no worker;
- ``rectangles``: noisy images with one coloured rectangle each, labelled
  exactly in KITTI files; ``built_rectangles``: those built by the dataset
  build itself; ``trained_detector``: a detector trained on them in this
  process by the trainer's own ``Run``, as the worker would leave its job
  folder; ``train_detector_once`` and ``copied_detector``: one trained for
  a module's tests, and the dataset and model jobs each test makes of a
  copy of it."""

from __future__ import annotations

import io
import json
import shutil
from functools import partial
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from tests.sharedruns import made_once
from tests.trainfiles import train_config
from trainer import jobfiles
from trainer.dataset_build import main as build_dataset
from trainer.datastore import EncodedSplitWriter, encode
from trainer.detection.targets import DIFFICULT, IGNORE, NO_CLASS, Boxes
from trainer.distributed import Placement
from trainer.train import Run

CLASSES = ("car", "person")
WIDTH, HEIGHT = 40, 30
# Each split's images as rows x1, y1, x2, y2, class, flags (stored pixels).
BOXES = {
    "train": [
        [[2, 3, 12, 10, 0, 0], [14, 2, 20, 20, 1, DIFFICULT]],
        [[1, 1, 9, 9, 1, 0], [20, 10, 30, 20, NO_CLASS, IGNORE]],
        [],
        [[0, 0, 40, 30, 0, 0]],
    ],
    "val": [
        [[5, 5, 15, 15, 0, 0]],
        [[10, 2, 30, 22, 1, 0]],
    ],
    "test": [],
}
SKIPPED = [{"path": "label_2/000003.txt", "class": "", "split": "train",
            "reason": "label_2/000003.txt, line 2: x2 (10) is left of x1 (40)"}]
SMALL_BOXES = 3


def make_detection_dataset(folder: Path, options: dict | None = None) -> Path:
    """The dataset of ``BOXES`` in ``folder`` (PNG store, colour); returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    shape = (HEIGHT, WIDTH, 3)
    splits = {}
    for split, images in BOXES.items():
        writer = EncodedSplitWriter(folder, split, shape, len(images), Boxes(), "png", 90)
        for rows in images:
            writer.add(encode(rng.integers(0, 255, shape, dtype=np.uint8), "png", 90), rows)
        writer.close()
        splits[split] = {"count": len(images), "per_class": [
            sum(any(r[4] == c and not r[5] & IGNORE for r in rows) for rows in images) for c in range(len(CLASSES))]}
    manifest = {"version": 1, "task": "detection", "options": options or {}, "classes": list(CLASSES),
                "image_shape": list(shape), "encoding": "png", "splits": splits,
                "skipped": {"total": len(SKIPPED), "per_class": {}}, "target_counts": {"small_boxes": SMALL_BOXES},
                "warnings": [], "mean": None, "seconds": 0.5, "files": {}}
    (folder / jobfiles.MANIFEST).write_text(json.dumps(manifest))
    (folder / jobfiles.SKIPPED).write_text(json.dumps(SKIPPED))
    return folder


CPU = Placement(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
SIZE = 32  # the images' side, in pixels
COLOURS = {"Car": (230, 40, 40), "Cyclist": (40, 230, 40)}
NETWORK = {"source": "standard", "name": "fasterrcnn_mobilenet_v3_large_fpn"}
# A dataset build's config for KITTI folders (the source is added).
BUILD_CONFIG = {"task": "detection", "channels": 3, "width": SIZE, "height": SIZE, "resize_mode": "squash",
                "val_percent": 25, "test_percent": 0, "encoding": "none", "quality": 90, "seed": 3, "mean": True,
                "label_format": "auto", "class_map": None,
                "placing": {"pad_width": None, "pad_height": None, "min_box_size": 0}}


def kitti_line(name: str, box: tuple[float, float, float, float]) -> str:
    return f"{name} 0.00 0 0.00 {box[0]:.2f} {box[1]:.2f} {box[2]:.2f} {box[3]:.2f} 1.5 1.6 3.9 1.0 1.0 10.0 0.0\n"


def rectangle_image(name: str, rng: np.random.Generator, size: int = SIZE) -> tuple[bytes, tuple[int, int, int, int]]:
    """A noisy size×size PNG with one rectangle of ``name``'s colour, 3/8 to
    3/4 of the side, and its box (x1, y1, x2, y2, pixel edges)."""
    pixels = rng.normal(70, 25, (size, size, 3)).clip(0, 255).astype(np.uint8)
    width, height = rng.integers(size * 3 // 8, size * 3 // 4 + 1, 2)
    x1, y1 = int(rng.integers(0, size - width + 1)), int(rng.integers(0, size - height + 1))
    pixels[y1:y1 + height, x1:x1 + width] = COLOURS[name]
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue(), (x1, y1, x1 + int(width), y1 + int(height))


def rectangles(root: Path, count: int, seed: int, size: int = SIZE) -> Path:
    """A KITTI folder (``image_2``, ``label_2``) of ``count`` size×size
    images from ``rectangle_image``, the classes taking turns."""
    rng = np.random.default_rng(seed)
    (root / "image_2").mkdir(parents=True)
    (root / "label_2").mkdir()
    for number in range(count):
        name = list(COLOURS)[number % len(COLOURS)]
        png, box = rectangle_image(name, rng, size)
        (root / "image_2" / f"{number:06d}.png").write_bytes(png)
        (root / "label_2" / f"{number:06d}.txt").write_text(kitti_line(name, box))
    return root


def rectangle_labels(kitti: Path) -> list[tuple[Path, str, tuple[float, float, float, float]]]:
    """Each image of a ``rectangles`` folder with its class and box, read back from its KITTI line."""
    found = []
    for label in sorted((kitti / "label_2").glob("*.txt")):
        words = label.read_text().split()
        found.append((kitti / "image_2" / f"{label.stem}.png", words[0], tuple(float(w) for w in words[4:8])))
    return found


def voc_folder(kitti: Path, out: Path) -> Path:
    """The ``rectangles`` of ``kitti`` as Pascal VOC: ``JPEGImages`` (PNGs) and ``Annotations`` (VOC counts
    pixels from 1, both ends included)."""
    (out / "JPEGImages").mkdir(parents=True)
    (out / "Annotations").mkdir()
    for image, name, (x1, y1, x2, y2) in rectangle_labels(kitti):
        shutil.copy(image, out / "JPEGImages" / image.name)
        (out / "Annotations" / f"{image.stem}.xml").write_text(
            f"<annotation><filename>{image.name}</filename><size><width>{SIZE}</width><height>{SIZE}</height>"
            f"<depth>3</depth></size><object><name>{name}</name><difficult>0</difficult><bndbox><xmin>{x1 + 1:g}</xmin>"
            f"<ymin>{y1 + 1:g}</ymin><xmax>{x2:g}</xmax><ymax>{y2:g}</ymax></bndbox></object></annotation>")
    return out


def yolo_files(kitti: Path, classes: list[str]) -> dict[str, bytes]:
    """The ``rectangles`` of ``kitti`` as YOLO files by name: ``images``, ``labels`` (fractions of the
    image) and ``classes.txt`` naming ``classes``."""
    files = {"classes.txt": "\n".join(classes).encode()}
    for image, name, (x1, y1, x2, y2) in rectangle_labels(kitti):
        files[f"images/{image.name}"] = image.read_bytes()
        files[f"labels/{image.stem}.txt"] = (f"{classes.index(name)} {(x1 + x2) / 2 / SIZE:.6f} {(y1 + y2) / 2 / SIZE:.6f} "
                                             f"{(x2 - x1) / SIZE:.6f} {(y2 - y1) / SIZE:.6f}\n").encode()
    return files


def built_rectangles(root: Path, count: int = 128, seed: int = 5, size: int = SIZE, **options) -> Path:
    """The dataset folder the build makes of ``rectangles`` (a quarter for
    validation), size×size; ``options`` change ``BUILD_CONFIG``'s."""
    source = rectangles(root / "kitti", count, seed=seed, size=size)
    job = root / "build"
    job.mkdir()
    config = {**BUILD_CONFIG, "width": size, "height": size, **options, "source": {"type": "folder", "path": str(source)}}
    (job / "config.json").write_text(json.dumps(config))
    assert build_dataset(str(job / "config.json")) == 0, (job / "events.jsonl").read_text()[-2000:]
    return job / "dataset"


def detection_config(dataset: Path, **overrides) -> dict:
    options = {"network": NETWORK, "task": "detection", "solver": "adamw", "lr": 0.003, "weight_decay": 0.0001,
               "batch_size": 8, "lr_policy": {"name": "fixed"}, "scale_lr": False, "mean": "pixel", "seed": 3}
    return {**train_config(dataset, **{**options, **overrides}), "job_id": 1, "devices": ["cpu0"]}


def trained_detector(folder: Path, dataset: Path, **overrides) -> Run:
    """A finished detection job in ``folder`` (config.json, checkpoints, events),
    trained on one thread: two torch threads ran these small detectors up to
    five times slower than one with the machine's cores busy (a module's
    fixture then outlasted the suite's 300 s limit)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = detection_config(dataset, **overrides)
    (folder / jobfiles.CONFIG).write_text(json.dumps(config))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run = Run(config, folder, CPU)
        run.train()
    finally:
        torch.set_num_threads(threads)
    return run


def train_detector_once(root: Path, count: int = 48, epochs: int = 3) -> Path:
    """``root/build/dataset`` built of ``count`` rectangles and a detector
    trained on it for ``epochs`` in ``root/run``, with no job rows: for a
    module's tests to share through ``copied_detector`` (made once in the
    suite's run, see ``tests/sharedruns.py``). Three epochs of 48 give a
    handful of boxes with scores apart (from about 0.15 to 0.3)."""
    return made_once(f"detector-{count}-{epochs}", partial(_train_detector, count=count, epochs=epochs), root)


def _train_detector(root: Path, count: int, epochs: int) -> None:
    trained_detector(root / "run", built_rectangles(root, count=count), epochs=epochs)


def copied_detector(owner, trained: Path, name: str = "detector"):
    """A done detection model and its dataset's job, holding copies of what
    ``train_detector_once`` made. (Django is imported here alone: the rest of
    this module serves processes without it, the trainer's tests' spawned
    processes and the benchmarks.)"""
    from datasets import services as dataset_services
    from jobs.models import Job, Status
    from tests.evalfiles import copied_run

    dataset = Job.objects.create(kind="dataset", name="rectangles", owner=owner, status=Status.DONE, progress=1.0,
                                 params={**BUILD_CONFIG, "source": {"type": "folder", "path": str(trained / "kitti")}})
    shutil.copytree(trained / "build" / "dataset", dataset_services.folder(dataset))
    return copied_run(owner, dataset, trained / "run", name)
