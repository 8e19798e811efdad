"""What ``bench/detection_overhead.py``, ``bench/segmentation_overhead.py`` and ``bench/instance_overhead.py``
share: a task's training run through ``make run``'s launcher (its API, a
generated archive uploaded and built raw, a model from ``POST /api/models``)
against a plain loop in the shape of torchvision's reference script for the
task, on the dataset the app built, started with the environment a job gets
(its thread variables too, ``jobs.cputhreads``). The sides alternate in
pairs, the first alternating too; printed are both sides' torch threads,
each pair and the median of the per-pair ratios with their range. Aim:
throughput app/plain ≥ 0.95. ``--control`` runs the plain loop a second
time in each pair and prints that loop against itself: the spread the
machine alone gives the ratio.

A task's benchmark says what differs (``Workload``): how its archive is
made and uploaded, its model's own params, its plain loop's script, and the
validation metric both sides report.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import median

from launched import LaunchedApp
from stack import machine
from train_overhead import plain_script, spread, stack_cpu_seconds

from jobs.cputhreads import machine_cores, thread_environment
from trainer import environment, eventkinds, jobfiles
from trainer.train import WARMUP_STEPS

LR = 0.003
CPU_SLOTS = 1  # the launcher's default: one CPU job at a time, with every core


@dataclass(frozen=True)
class Workload:
    """A task's benchmark: ``archive(target, args)`` writes the generated
    source as a tar.gz, uploaded with ``dataset_fields(args)``; ``model``
    its model's own params; ``plain`` its plain loop's script in ``bench/``;
    ``metric`` the result's validation field (``val_<metric>`` in the app's,
    ``val_<metric>`` in the plain loop's JSON), shown as ``label``;
    ``described(args)`` the line that says what was trained."""

    archive: Callable[[Path, argparse.Namespace], Path]
    dataset_fields: Callable[[argparse.Namespace], dict[str, str]]
    model: dict[str, object]
    plain: str
    metric: str
    label: str
    described: Callable[[argparse.Namespace], str]
    network: str
    batch: int
    # Whether its plain loop lays its network and batches out channels-last
    # when asked (``--channels-last``); a detector's batches its images itself.
    layouts: bool = False


def upload(app: LaunchedApp, work: Workload, args: argparse.Namespace) -> Path:
    archive = work.archive(app.folder / "source.tar.gz", args)
    with open(archive, "rb") as handle:
        job = app.call("POST", "/api/datasets", data=work.dataset_fields(args),
                       files={"archive": (archive.name, handle)}).json()
    app.wait_job(job["id"], 1800)
    args.dataset_job = job["id"]
    return app.job_folder(job["id"]) / jobfiles.DATASET


def app_run(app: LaunchedApp, work: Workload, args: argparse.Namespace) -> dict:
    params = {"name": "bench", "dataset": args.dataset_job, "network": {"source": "standard", "name": args.network},
              "epochs": args.epochs, "batch_size": str(args.batch), "lr": str(LR), "lr_policy": "fixed",
              "solver": "adamw", "weight_decay": 0.0001, "flip": "horizontal", "mean": "pixel",
              "precision": args.precision, "channels_last": args.channels_last, "seed": 1,
              "device": "gpu" if args.gpu else "cpu", **work.model}
    before = stack_cpu_seconds(app)
    job_id = app.call("POST", "/api/models", json=params).json()["jobs"][0]["id"]
    job = app.wait_job(job_id, 3600, poll=5.0)
    after = stack_cpu_seconds(app)
    wall = (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["created_at"])).total_seconds()
    result = app.events(job_id, eventkinds.RESULT)[-1]["data"]
    return {"rate": result["images_per_s"], "wall": wall, "metric": result["final"].get(f"val_{work.metric}", 0.0),
            "threads": app.events(job_id, eventkinds.HARDWARE)[0]["data"]["threads"],
            "stack_cpu": sum(after[name] - before.get(name, 0.0) for name in after)}


def plain_run(dataset: Path, work: Workload, args: argparse.Namespace) -> dict:
    recipe = {"network": args.network, "epochs": args.epochs, "batch": args.batch, "lr": LR, "flip": "horizontal",
              "precision": args.precision, "channels_last": args.channels_last, "warmup_steps": WARMUP_STEPS}
    threads = thread_environment(["cpu0"], CPU_SLOTS, machine_cores(), environment.allowed(os.environ))
    result, wall = plain_script(work.plain, dataset, recipe, threads)
    return {"rate": result["images_per_s"], "wall": wall, "metric": result[f"val_{work.metric}"],
            "threads": result["threads"]}


def report(work: Workload, args: argparse.Namespace, apps: list[dict], plains: list[dict],
           controls: list[dict]) -> None:
    load = os.getloadavg()
    print(f"machine: {machine()}; load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{work.described(args)}, {args.epochs} epochs, batch {args.batch}, AdamW lr {LR:g} fixed, horizontal "
          f"flips, mean pixel, {args.precision}, {'channels-last' if args.channels_last else 'NCHW'}; "
          f"{len(apps)} alternated pairs")
    print(f"torch threads: app's job {sorted({a['threads'] for a in apps})}, "
          f"plain loop {sorted({p['threads'] for p in plains})}")
    for number, (app, plain) in enumerate(zip(apps, plains, strict=True), 1):
        print(f"pair {number}: app {app['rate']:7.1f} images/s, {app['wall']:6.1f} s; plain {plain['rate']:7.1f} "
              f"images/s, {plain['wall']:6.1f} s; ratios {app['rate'] / plain['rate']:.3f}x, "
              f"{app['wall'] / plain['wall']:.3f}x")
    print(f"val {work.label} of the last pair: app {apps[-1]['metric']:.3f}, plain {plains[-1]['metric']:.3f}")
    print(f"CPU the app's other processes used during a run (median): "
          f"{100 * median(a['stack_cpu'] for a in apps) / median(a['wall'] for a in apps):.1f}% of one core")
    pairs = list(zip(apps, plains, strict=True))
    print(f"training throughput app/plain: {spread([a['rate'] / p['rate'] for a, p in pairs])} (aim >= 0.95)")
    print(f"wall clock app/plain: {spread([a['wall'] / p['wall'] for a, p in pairs])}")
    if controls:
        print(f"the plain loop against itself (throughput, the machine's noise): "
              f"{spread([c['rate'] / p['rate'] for c, p in zip(controls, plains, strict=True)])}")


def main(work: Workload, description: str) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--network", default=work.network)
    parser.add_argument("--images", type=int, default=640)
    parser.add_argument("--size", type=int, default=64, help="the images' width, in pixels")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=work.batch)
    parser.add_argument("--pairs", type=int, default=3, help="alternated app/plain pairs")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--control", action="store_true", help="run the plain loop twice a pair")
    if work.layouts:
        parser.add_argument("--channels-last", action="store_true",
                            help="both sides in the channels-last memory layout (the app's option; else NCHW)")
    args = parser.parse_args()
    args.channels_last = getattr(args, "channels_last", False)

    import torch

    args.gpu = torch.cuda.is_available()
    folder = Path(tempfile.mkdtemp(prefix="digitslike-bench-"))
    app = LaunchedApp(folder, "bench")
    try:
        app.wait_up()
        app.sign_up()
        dataset = upload(app, work, args)
        apps, plains, controls = [], [], []
        for number in range(args.pairs):  # the side that goes first alternates, so drifts hit both alike
            if number % 2:
                plains.append(plain_run(dataset, work, args))
                apps.append(app_run(app, work, args))
            else:
                apps.append(app_run(app, work, args))
                plains.append(plain_run(dataset, work, args))
            if args.control:
                controls.append(plain_run(dataset, work, args))
        report(work, args, apps, plains, controls)
    finally:
        app.close()
        shutil.rmtree(folder, ignore_errors=True)
