"""How much does the app cost an instance segmentation run, as a user gets it?

The instance segmentation counterpart of ``bench/detection_overhead.py``,
measured the same way (``bench/task_overhead.py``). The app's side: a
tar.gz of generated scenes (``tests/instancefiles.py``: discs and boxes on
noise, one to three an image, as a COCO JSON of RLEs) uploaded and built
raw, and a Mask R-CNN created through ``POST /api/models``; its figures are
the job's result (images/s after the warm-up batches) and the wall clock
from its creation to its end. The plain side: ``bench/plain_instances.py``,
a loop in the shape of torchvision's reference detection script on the
dataset the app built. Same network, batch, solver, flips, mean pixel and
precision.

    .venv/bin/python bench/instance_overhead.py [--network maskrcnn_mobilenet_v3_large_fpn]
        [--images 640] [--size 64] [--epochs 2] [--batch 8] [--pairs 3] [--precision fp32|bf16] [--control]
"""

from __future__ import annotations

import argparse
import tarfile
from pathlib import Path

from task_overhead import Workload, main


def height(args: argparse.Namespace) -> int:
    return args.size * 3 // 4


def coco_archive(target: Path, args: argparse.Namespace) -> Path:
    """A tar.gz of ``images/`` and ``annotations/instances.json`` of generated scenes."""
    from tests.instancefiles import coco_source

    source = target.parent / "shapes"
    coco_source(source, args.images, (args.size, height(args)))
    with tarfile.open(target, "w:gz") as out:
        out.add(source, arcname="shapes")
    return target


INSTANCES = Workload(
    archive=coco_archive,
    dataset_fields=lambda args: {"task": "instance_segmentation", "name": "shapes", "source": "archive",
                                 "width": str(args.size), "height": str(height(args)), "resize_mode": "squash",
                                 "val_percent": "20", "test_percent": "0", "encoding": "none"},
    model={}, plain="plain_instances.py", metric="mask_map50", label="mask mAP@0.5",
    described=lambda args: f"{args.network} on {args.images} generated {args.size}x{height(args)} scenes "
                           f"(20% for validation)",
    network="maskrcnn_mobilenet_v3_large_fpn", batch=8)

if __name__ == "__main__":
    main(INSTANCES, __doc__.split("\n\n")[0])
