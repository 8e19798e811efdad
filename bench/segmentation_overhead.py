"""How much does the app cost a segmenter's training run, as a user gets it?

The segmentation counterpart of ``bench/detection_overhead.py``, measured
the same way (``bench/task_overhead.py``). The app's side: a tar.gz of
generated scenes (``tests/segmentationfiles.py``: discs and rectangles on
noise, palette label images with an ignore border) uploaded and built raw,
and a U-Net created through ``POST /api/models``; its figures are the job's
result (images/s after the warm-up batches) and the wall clock from its
creation to its end. The plain side: ``bench/plain_segmentation.py``, a
loop in the shape of torchvision's reference segmentation script on the
dataset the app built. Same network, batch, solver, flips, mean pixel, loss
(cross-entropy ignoring 255) and precision.

    .venv/bin/python bench/segmentation_overhead.py [--network unet]
        [--images 640] [--size 64] [--epochs 2] [--batch 16] [--pairs 3] [--precision fp32|bf16] [--control]
        [--channels-last]
"""

from __future__ import annotations

import argparse
import tarfile
from pathlib import Path

from task_overhead import Workload, main

CLASSES = "background\ndisc\nbox"


def height(args: argparse.Namespace) -> int:
    return args.size * 3 // 4


def scenes_archive(target: Path, args: argparse.Namespace) -> Path:
    """A tar.gz of ``images/`` and ``labels/`` of generated scenes."""
    from tests.segmentationfiles import folders_source

    source = target.parent / "scenes"
    folders_source(source, args.images, size=(args.size, height(args)), border=1)
    with tarfile.open(target, "w:gz") as out:
        out.add(source, arcname="scenes")
    return target


SEGMENTATION = Workload(
    archive=scenes_archive,
    dataset_fields=lambda args: {"task": "segmentation", "name": "scenes", "source": "archive",
                                 "width": str(args.size), "height": str(height(args)), "resize_mode": "squash",
                                 "val_percent": "20", "test_percent": "0", "encoding": "none",
                                 "class_names": CLASSES},
    model={"segmentation_loss": "cross_entropy"}, plain="plain_segmentation.py", metric="miou", label="mIoU",
    described=lambda args: f"{args.network} on {args.images} generated {args.size}x{height(args)} scenes "
                           f"(20% for validation)",
    network="unet", batch=16, layouts=True)

if __name__ == "__main__":
    main(SEGMENTATION, __doc__.split("\n\n")[0])
