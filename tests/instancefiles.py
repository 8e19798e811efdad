"""Instance segmentation sources made for the tests: scenes of discs and
rectangles on noise, each shape one object of its class, written as COCO
JSON (polygons and RLEs, a crowd region among them) or in Pascal VOC's
layout (``SegmentationObject`` and ``SegmentationClass`` palette PNGs), with
what each image's objects are."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
from PIL import Image
from pycocotools import mask as coco_mask

from tests.sharedruns import made_once
from trainer.segmentation.labels import voc_colours

WIDTH, HEIGHT = 64, 48
CLASSES = ("disc", "box")
# VOC's class values of the two shapes (VOC's 20 classes: 1 aeroplane … 20 tvmonitor).
VOC_VALUES = {"disc": 8, "box": 5}  # cat, bottle
BUILD_CONFIG = {"task": "instance_segmentation", "channels": 3, "width": 64, "height": 48, "resize_mode": "squash",
                "val_percent": 25, "test_percent": 0, "encoding": "png", "quality": 90, "seed": 3, "mean": True,
                "layout": "auto", "placing": {"pad_width": None, "pad_height": None}}


def disc(cx: float, cy: float, radius: float, size: tuple[int, int] = (WIDTH, HEIGHT)) -> np.ndarray:
    ys, xs = np.mgrid[:size[1], :size[0]]
    return (xs - cx) ** 2 + (ys - cy) ** 2 <= radius**2


def box(x1: int, y1: int, x2: int, y2: int, size: tuple[int, int] = (WIDTH, HEIGHT)) -> np.ndarray:
    mask = np.zeros((size[1], size[0]), dtype=bool)
    mask[y1:y2, x1:x2] = True
    return mask


def scene(seed: int, size: tuple[int, int] = (WIDTH, HEIGHT)) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """Noise with one to three shapes that do not touch, each brightly
    coloured by its class (discs red, boxes blue): the pixels and the
    objects (class name, H×W bool) in the order drawn."""
    rng = np.random.default_rng(seed)
    width, height = size
    pixels = rng.integers(0, 90, (height, width, 3), dtype=np.uint8)
    objects: list[tuple[str, np.ndarray]] = []
    taken = np.zeros((height, width), dtype=bool)
    for _ in range(int(rng.integers(1, 4))):
        for _try in range(20):
            name = CLASSES[int(rng.integers(0, 2))]
            side = int(rng.integers(height // 6, height // 3))
            x, y = int(rng.integers(side, width - side)), int(rng.integers(side, height - side))
            mask = disc(x, y, side * 0.8, size) if name == "disc" else box(x - side, y - side // 2, x + side,
                                                                            y + side // 2, size)
            grown = np.zeros_like(mask)
            grown[max(0, y - 2 * side):y + 2 * side, max(0, x - 2 * side):x + 2 * side] = True
            if not (taken & grown).any():
                taken |= mask
                objects.append((name, mask))
                pixels[mask] = (220, 40, 40) if name == "disc" else (40, 60, 220)
                break
    return pixels, objects


def one_shape(seed: int, size: tuple[int, int]) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """Noise with one large shape (3/8 to 3/4 of the image's side) coloured
    by its class, the classes taking turns: what a detector learns in a few
    CPU epochs (as detection's rectangles)."""
    rng = np.random.default_rng(seed)
    width, height = size
    pixels = rng.integers(0, 90, (height, width, 3), dtype=np.uint8)
    name = CLASSES[seed % 2]
    side = int(rng.integers(min(size) * 3 // 8, min(size) * 3 // 4 + 1))
    x, y = int(rng.integers(0, width - side + 1)), int(rng.integers(0, height - side + 1))
    mask = disc(x + side / 2 - 0.5, y + side / 2 - 0.5, side / 2, size) if name == "disc" else \
        box(x, y, x + side, y + side, size)
    pixels[mask] = (220, 40, 40) if name == "disc" else (40, 60, 220)
    return pixels, [(name, mask)]


def rle(mask: np.ndarray) -> dict:
    encoded = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": encoded["size"], "counts": encoded["counts"].decode("ascii")}


def coco_source(root: Path, count: int, size: tuple[int, int] = (WIDTH, HEIGHT), crowd: bool = False,
                made_by=scene) -> dict[str, list[tuple[str, np.ndarray]]]:
    """``count`` scenes (``made_by``'s) as ``images/`` and
    ``annotations/instances.json`` (every object an RLE; with ``crowd``, the
    second object of the first image with two a crowd region); each image's
    objects by its file name."""
    (root / "images").mkdir(parents=True)
    (root / "annotations").mkdir()
    scenes = {number: made_by(number, size) for number in range(1, count + 1)}
    crowded = next((number for number, (_, objects) in scenes.items() if len(objects) > 1), None) if crowd else None
    images, annotations, made = [], [], {}
    for number, (pixels, objects) in scenes.items():
        name = f"{number}.png"
        Image.fromarray(pixels).save(root / "images" / name)
        images.append({"id": number, "file_name": name, "width": size[0], "height": size[1]})
        for index, (label, mask) in enumerate(objects):
            ys, xs = np.nonzero(mask)
            annotations.append({"id": len(annotations) + 1, "image_id": number, "category_id": 1 + CLASSES.index(label),
                                "segmentation": rle(mask), "area": int(mask.sum()),
                                "bbox": [int(xs.min()), int(ys.min()), int(np.ptp(xs)) + 1, int(np.ptp(ys)) + 1],
                                "iscrowd": int(number == crowded and index == 1)})
        made[name] = objects
    (root / "annotations" / "instances.json").write_text(json.dumps({
        "images": images, "annotations": annotations,
        "categories": [{"id": 1 + i, "name": name} for i, name in enumerate(CLASSES)]}))
    return made


def palette_png(values: np.ndarray, path: Path) -> None:
    image = Image.fromarray(values.astype(np.uint8), "P")
    image.putpalette([channel for colour in voc_colours(256) for channel in colour])
    image.save(path)


def border(mask: np.ndarray) -> np.ndarray:
    """The pixels next to ``mask`` (its four neighbours) outside it."""
    grown = mask.copy()
    grown[1:] |= mask[:-1]
    grown[:-1] |= mask[1:]
    grown[:, 1:] |= mask[:, :-1]
    grown[:, :-1] |= mask[:, 1:]
    return grown & ~mask


def voc_source(root: Path, count: int) -> dict[str, list[tuple[str, np.ndarray]]]:
    """``count`` scenes in VOC's layout, each object's border 255 in both
    label images as VOC draws it; each image's objects by its stem."""
    for folder in ("JPEGImages", "SegmentationObject", "SegmentationClass"):
        (root / folder).mkdir(parents=True)
    made = {}
    for number in range(1, count + 1):
        pixels, objects = scene(number)
        stem = f"2007_{number:06d}"
        Image.fromarray(pixels).save(root / "JPEGImages" / f"{stem}.png")
        numbers = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
        classes = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
        for index, (label, mask) in enumerate(objects, start=1):
            numbers[mask], classes[mask] = index, VOC_VALUES[label]
            ring = border(mask)
            numbers[ring], classes[ring] = 255, 255
        palette_png(numbers, root / "SegmentationObject" / f"{stem}.png")
        palette_png(classes, root / "SegmentationClass" / f"{stem}.png")
        made[stem] = objects
    return made


NETWORK = {"source": "standard", "name": "maskrcnn_mobilenet_v3_large_fpn"}


def built_shapes(root: Path, count: int = 128, side: int = 32) -> Path:
    """The dataset folder the build makes of ``count`` ``one_shape`` scenes,
    side×side, raw, a quarter for validation (their source in ``root/source``)."""
    from trainer.dataset_build import main

    coco_source(root / "source", count, (side, side), made_by=one_shape)
    job = root / "build"
    job.mkdir()
    (job / "config.json").write_text(json.dumps({**BUILD_CONFIG, "width": side, "height": side, "encoding": "none",
                                                 "source": {"type": "folder", "path": str(root / "source")}}))
    if main(str(job / "config.json")) != 0:
        raise AssertionError((job / "events.jsonl").read_text()[-2000:])
    return job / "dataset"


def instance_config(dataset: Path, **overrides) -> dict:
    """An instance segmentation run's params as the New model form makes them: Mask R-CNN MobileNetV3, AdamW."""
    from tests.trainfiles import train_config

    options = {"network": NETWORK, "task": "instance_segmentation", "solver": "adamw", "lr": 0.002,
               "weight_decay": 0.0001, "batch_size": 8, "lr_policy": {"name": "fixed"}, "scale_lr": False,
               "mean": "pixel", "seed": 3}
    return {**train_config(dataset, **{**options, **overrides}), "job_id": 1, "devices": ["cpu0"]}


def trained_instances(folder: Path, dataset: Path, **overrides):
    """A finished instance segmentation job in ``folder``, trained in this process on the CPU; its ``Run``."""
    from tests.detectionfiles import CPU
    from trainer import jobfiles
    from trainer.train import Run

    folder.mkdir(parents=True, exist_ok=True)
    config = instance_config(dataset, **overrides)
    (folder / jobfiles.CONFIG).write_text(json.dumps(config))
    run = Run(config, folder, CPU)
    run.train()
    return run


def train_instances_once(root: Path, count: int = 24, epochs: int = 1) -> Path:
    """``root/build/dataset`` built of ``count`` one-shape scenes and a Mask
    R-CNN trained on it for ``epochs`` in ``root/run`` on one thread, with
    no job rows: for a module's tests to share through ``copied_instances``
    (made once in the suite's run, see ``tests/sharedruns.py``)."""
    return made_once(f"instances-{count}-{epochs}", partial(_train_instances, count=count, epochs=epochs), root)


def _train_instances(root: Path, count: int, epochs: int) -> None:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trained_instances(root / "run", built_shapes(root, count=count), epochs=epochs)
    finally:
        torch.set_num_threads(threads)


def copied_instances(owner, trained: Path, name: str = "instances"):
    """A done instance segmentation model and its dataset's job, holding
    copies of what ``train_instances_once`` made."""
    import shutil

    from datasets import services as dataset_services
    from jobs.models import Job, Status
    from tests.evalfiles import copied_run

    dataset = Job.objects.create(kind="dataset", name="shapes", owner=owner, status=Status.DONE, progress=1.0,
                                 params={**BUILD_CONFIG, "width": 32, "height": 32,
                                         "source": {"type": "folder", "path": str(trained / "source")}})
    shutil.copytree(trained / "build" / "dataset", dataset_services.folder(dataset))
    return copied_run(owner, dataset, trained / "run", name)
