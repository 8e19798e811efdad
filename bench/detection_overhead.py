"""How much does the app cost a detector's training run, as a user gets it?

The detection counterpart of ``bench/train_overhead.py``, measured the same
way (``bench/task_overhead.py``, which the segmentation benchmark shares).
The app's side: ``make run``'s launcher driven through its API
(``bench/launched.py``), a KITTI archive of generated rectangles
(``tests/detectionfiles.py``: noisy images with one coloured rectangle each,
exact boxes) uploaded and built with raw storage, and a model created
through ``POST /api/models``; its figures are the job's result (images/s
after the warm-up batches) and the wall clock from its creation to its end.
The plain side: ``bench/plain_detection.py``, a loop in the shape of
torchvision's reference detection script on the dataset the app built,
started with the environment a job gets, its thread variables too
(``jobs.cputhreads``). Same detector, batch, solver, flips, mean pixel and
precision. The sides alternate in pairs, the first alternating too; printed
are both sides' torch threads, each pair and the median of the per-pair
ratios with their range. Aim: throughput app/plain ≥ 0.95.

``--control`` runs the plain loop a second time in each pair and prints
that loop against itself: the spread the machine alone gives the ratio
(on a 2-core machine, two-thread runs of one seed have differed by 15%).

    .venv/bin/python bench/detection_overhead.py [--network fasterrcnn_mobilenet_v3_large_fpn]
        [--images 640] [--size 64] [--epochs 2] [--batch 8] [--pairs 3] [--precision fp32|bf16] [--control]
"""

from __future__ import annotations

import argparse
import tarfile
from pathlib import Path

from task_overhead import Workload, main


def kitti_archive(target: Path, args: argparse.Namespace) -> Path:
    """A tar.gz of ``rectangles`` in KITTI's folders."""
    from tests.detectionfiles import rectangles

    source = rectangles(target.parent / "kitti", args.images, seed=1, size=args.size)
    with tarfile.open(target, "w:gz") as out:
        out.add(source, arcname="kitti")
    return target


DETECTION = Workload(
    archive=kitti_archive,
    dataset_fields=lambda args: {"task": "detection", "name": "rectangles", "source": "archive",
                                 "width": str(args.size), "height": str(args.size), "resize_mode": "squash",
                                 "val_percent": "20", "test_percent": "0", "encoding": "none"},
    model={}, plain="plain_detection.py", metric="map50", label="mAP@0.5",
    described=lambda args: f"{args.network} on {args.images} generated {args.size}x{args.size} images "
                           f"(20% for validation)",
    network="fasterrcnn_mobilenet_v3_large_fpn", batch=8)

if __name__ == "__main__":
    main(DETECTION, __doc__.split("\n\n")[0])
