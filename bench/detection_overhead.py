"""How much does the app cost a detector's training run, as a user gets it?

The detection counterpart of ``bench/train_overhead.py``, measured the same
way. The app's side: ``make run``'s launcher driven through its API
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
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path
from statistics import median

from launched import LaunchedApp
from stack import ROOT, machine
from train_overhead import spread, stack_cpu_seconds

from jobs.cputhreads import machine_cores, thread_environment
from trainer import environment, eventkinds, jobfiles
from trainer.train import WARMUP_STEPS

LR = 0.003
CPU_SLOTS = 1  # the launcher's default: one CPU job at a time, with every core


def kitti_archive(target: Path, args: argparse.Namespace) -> Path:
    """A tar.gz of ``rectangles`` in KITTI's folders."""
    from tests.detectionfiles import rectangles

    source = rectangles(target.parent / "kitti", args.images, seed=1, size=args.size)
    with tarfile.open(target, "w:gz") as out:
        out.add(source, arcname="kitti")
    return target


def upload(app: LaunchedApp, args: argparse.Namespace) -> Path:
    archive = kitti_archive(app.folder / "rectangles.tar.gz", args)
    fields = {"task": "detection", "name": "rectangles", "source": "archive", "width": str(args.size),
              "height": str(args.size), "resize_mode": "squash", "val_percent": "20", "test_percent": "0",
              "encoding": "none"}
    with open(archive, "rb") as handle:
        job = app.call("POST", "/api/datasets", data=fields, files={"archive": (archive.name, handle)}).json()
    app.wait_job(job["id"], 1800)
    args.dataset_job = job["id"]
    return app.job_folder(job["id"]) / jobfiles.DATASET


def app_run(app: LaunchedApp, args: argparse.Namespace) -> dict:
    params = {"name": "bench", "dataset": args.dataset_job, "network": {"source": "standard", "name": args.network},
              "epochs": args.epochs, "batch_size": str(args.batch), "lr": str(LR), "lr_policy": "fixed",
              "solver": "adamw", "weight_decay": 0.0001, "flip": "horizontal", "mean": "pixel",
              "precision": args.precision, "seed": 1, "device": "gpu" if args.gpu else "cpu"}
    before = stack_cpu_seconds(app)
    job_id = app.call("POST", "/api/models", json=params).json()["jobs"][0]["id"]
    job = app.wait_job(job_id, 3600, poll=5.0)
    after = stack_cpu_seconds(app)
    wall = (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["created_at"])).total_seconds()
    result = app.events(job_id, eventkinds.RESULT)[-1]["data"]
    return {"rate": result["images_per_s"], "wall": wall, "map50": result["final"].get("val_map50", 0.0),
            "threads": app.events(job_id, eventkinds.HARDWARE)[0]["data"]["threads"],
            "stack_cpu": sum(after[name] - before.get(name, 0.0) for name in after)}


def plain_run(dataset: Path, args: argparse.Namespace) -> dict:
    recipe = {"network": args.network, "epochs": args.epochs, "batch": args.batch, "lr": LR, "flip": "horizontal",
              "precision": args.precision, "warmup_steps": WARMUP_STEPS}
    out = Path(tempfile.mkdtemp(prefix="digitslike-plain-detection-"))
    env = {**environment.allowed(os.environ), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}  # as a job's
    env.update(thread_environment(["cpu0"], CPU_SLOTS, machine_cores(), env))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "plain_detection.py"), str(dataset), str(out),
                           json.dumps(recipe)], capture_output=True, text=True, cwd=out, env=env,
                          start_new_session=True)
    wall = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode:
        sys.exit(f"the plain loop failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"rate": result["images_per_s"], "wall": wall, "map50": result["val_map50"], "threads": result["threads"]}


def report(args: argparse.Namespace, apps: list[dict], plains: list[dict], controls: list[dict]) -> None:
    load = os.getloadavg()
    print(f"machine: {machine()}; load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{args.network} on {args.images} generated {args.size}x{args.size} images (20% for validation), "
          f"{args.epochs} epochs, batch {args.batch}, AdamW lr {LR:g} fixed, horizontal flips, mean pixel, "
          f"{args.precision}; {len(apps)} alternated pairs")
    print(f"torch threads: app's job {sorted({a['threads'] for a in apps})}, "
          f"plain loop {sorted({p['threads'] for p in plains})}")
    for number, (app, plain) in enumerate(zip(apps, plains, strict=True), 1):
        print(f"pair {number}: app {app['rate']:7.1f} images/s, {app['wall']:6.1f} s; plain {plain['rate']:7.1f} "
              f"images/s, {plain['wall']:6.1f} s; ratios {app['rate'] / plain['rate']:.3f}x, "
              f"{app['wall'] / plain['wall']:.3f}x")
    print(f"val mAP@0.5 of the last pair: app {apps[-1]['map50']:.3f}, plain {plains[-1]['map50']:.3f}")
    print(f"CPU the app's other processes used during a run (median): "
          f"{100 * median(a['stack_cpu'] for a in apps) / median(a['wall'] for a in apps):.1f}% of one core")
    pairs = list(zip(apps, plains, strict=True))
    print(f"training throughput app/plain: {spread([a['rate'] / p['rate'] for a, p in pairs])} (aim >= 0.95)")
    print(f"wall clock app/plain: {spread([a['wall'] / p['wall'] for a, p in pairs])}")
    if controls:
        print(f"the plain loop against itself (throughput, the machine's noise): "
              f"{spread([c['rate'] / p['rate'] for c, p in zip(controls, plains, strict=True)])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="fasterrcnn_mobilenet_v3_large_fpn")
    parser.add_argument("--images", type=int, default=640)
    parser.add_argument("--size", type=int, default=64, help="the images' side, in pixels")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=3, help="alternated app/plain pairs")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--control", action="store_true", help="run the plain loop twice a pair")
    args = parser.parse_args()

    import torch

    args.gpu = torch.cuda.is_available()
    folder = Path(tempfile.mkdtemp(prefix="digitslike-bench-"))
    app = LaunchedApp(folder, "bench")
    try:
        app.wait_up()
        app.sign_up()
        dataset = upload(app, args)
        apps, plains, controls = [], [], []
        for number in range(args.pairs):  # the side that goes first alternates, so drifts hit both alike
            if number % 2:
                plains.append(plain_run(dataset, args))
                apps.append(app_run(app, args))
            else:
                apps.append(app_run(app, args))
                plains.append(plain_run(dataset, args))
            if args.control:
                controls.append(plain_run(dataset, args))
        report(args, apps, plains, controls)
    finally:
        app.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
