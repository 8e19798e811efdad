"""How much does the app cost a training run?

Trains the same network on the same packed dataset for the same epochs
through the app (a real worker; submit → done) and with the plain PyTorch
loop in ``bench/plain_train.py``, in pairs: the two alternate, the one that
goes first alternates too, and each pair gives a ratio, so that the
machine's drifts (other work on a shared machine) hit both sides of a pair
alike. Reported: the median of the per-pair ratios with their range, for

- training throughput (aim ≥ 0.97): each run's median images/s over its
  reporting intervals (the trainer's ``perf`` events; the plain loop cuts
  its own time the same way), the warm-up batches left out on both sides;
  the ratio of whole-run throughputs (all intervals together) is printed
  beside it;
- wall clock (aim ≤ 1.10): submit → done against process start → exit.

Both sides run in a session of their own, as the worker starts a job: with
the kernel's automatic grouping of sessions for scheduling (Linux's
default), a process shares the CPU with its session, so a baseline started
in the benchmark's session would compete with whatever else runs there.
Both sides run with the same number of torch threads (``--threads``,
default 1: on a machine shared with other work, threads that wait for each
other at every operation slow down far more than one thread does, and by
different amounts from run to run). Two workloads:

- ``lenet``: generated 28×28 grayscale bars, four classes, 4,000 training
  and 500 validation images, 2 epochs, batch 128, Nesterov SGD (short, so
  that many pairs fit in a few minutes);
- ``resnet18``: generated photo-like 64×64 colour images (flowers of five
  kinds on varied backgrounds), 2,935 training and 735 validation images,
  2 epochs, batch 64, SGD with momentum.

    .venv/bin/python bench/train_overhead.py [--workload lenet|resnet18] [--pairs 5] [--threads N]
        [--epochs E] [--batch B] [--precision fp32|bf16] [--dataset DIR] [--ddp]

``--dataset`` trains on a built dataset folder (raw storage) instead of
the generated one. ``--ddp`` also runs the trainer under torchrun with two
processes (gloo on the CPU, NCCL on GPUs) against one on the same global batch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import numpy as np
from stack import ROOT, Stack, machine

FLOWERS = ("daisy", "dandelion", "roses", "sunflowers", "tulips")
FLOWER_COLOURS = np.array([[235, 235, 225], [240, 200, 40], [200, 30, 60], [250, 180, 20], [220, 60, 140]], float)


@dataclass(frozen=True)
class Workload:
    network: str
    solver: str
    epochs: int
    batch: int
    lr: float
    per_class: dict[str, int]
    size: int
    classes: tuple[str, ...]
    channels: int


WORKLOADS = {
    "lenet": Workload("lenet", "nesterov", 2, 128, 0.02, {"train": 1000, "val": 125, "test": 0}, 28,
                      ("horizontal", "vertical", "diagonal", "antidiagonal"), 1),
    "resnet18": Workload("resnet18", "momentum", 2, 64, 0.01, {"train": 587, "val": 147, "test": 0}, 64, FLOWERS, 3),
}


@dataclass
class Run:
    """One run of either side: its median and whole-run throughput, wall clock, accuracy."""

    rate: float        # median images/s over the reporting intervals after the warm-up
    whole_rate: float  # images/s of all those intervals together
    wall: float
    val_top1: float


def photo(label: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """A photo-like size×size RGB image of class ``label``: a sky and ground
    gradient with noise, and one to three flowers whose petal count and
    colour tell the class (the colour varies from flower to flower)."""
    yy, xx = np.mgrid[0:size, 0:size] / size
    horizon = rng.uniform(0.3, 0.7)
    blend = np.clip((yy - horizon) * 6 + 0.5, 0, 1)[..., None]
    pixels = rng.uniform(0, 255, 3) * (1 - blend) + rng.uniform(0, 160, 3) * blend
    for _ in range(int(rng.integers(1, 4))):
        cx, cy, r = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8), rng.uniform(0.08, 0.25)
        radius = np.hypot(xx - cx, yy - cy) / r
        edge = 1 + 0.3 * np.cos((5 + label) * np.arctan2(yy - cy, xx - cx) + rng.uniform(0, 2 * np.pi))
        colour = np.clip(FLOWER_COLOURS[label] + rng.normal(0, 25, 3), 0, 255)
        pixels = np.where((radius < edge)[..., None], colour * (1.1 - 0.3 * radius[..., None]), pixels)
    pixels += rng.normal(0, 8, (size, size, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def make_workload_dataset(folder: Path, work: Workload) -> Path:
    from tests.trainfiles import bars, make_dataset

    draw = photo if work.channels == 3 else bars
    return make_dataset(folder, work.per_class, size=work.size, draw=draw, classes=work.classes, channels=work.channels)


def plain_run(dataset: Path, args: argparse.Namespace) -> Run:
    from trainer.train import REPORT_SECONDS, WARMUP_STEPS

    start = time.perf_counter()
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "plain_train.py"), str(dataset), args.network,
                          str(args.epochs), str(args.batch), str(args.lr), args.solver, args.precision,
                          str(WARMUP_STEPS), str(REPORT_SECONDS)],
                         check=True, capture_output=True, text=True, cwd=ROOT,
                         start_new_session=True)  # as the worker starts a job: see the module's docstring
    wall = time.perf_counter() - start
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return Run(median(result["interval_rates"]), result["images_per_s"], wall, result["val_top1"])


def params(dataset: Path, args: argparse.Namespace, **overrides) -> dict:
    from tests.trainfiles import train_config

    chosen = {"network": {"source": "standard", "name": args.network}, "epochs": args.epochs, "batch_size": args.batch,
              "lr": args.lr, "precision": args.precision, "seed": 0, "lr_policy": {"name": "cosine"},
              "solver": args.solver, "momentum": 0.9}
    return train_config(dataset, **{**chosen, **overrides})


def wait_done(job_id: int) -> None:
    """Block on the bus's jobs stream until the job's status is terminal: no
    polling, so the wait takes no CPU from the run it times."""
    from jobs import bus
    from jobs.models import TERMINAL

    client, last = bus.client(), "0"
    while True:
        for _, entries in client.xread({bus.jobs_stream(): last}, block=1000) or []:
            for entry_id, fields in entries:
                last = entry_id
                job, event = bus.decode(fields)
                if job == job_id and event["kind"] == "status" and event["data"]["status"] in TERMINAL:
                    return


def warm_worker(owner, worker) -> None:
    """Wait until the worker has registered and has run one quick job (the
    test suite's sleeping kind), so that no pair times the worker's own start."""
    from jobs import services
    from jobs.models import Worker

    deadline = time.monotonic() + 120
    while not Worker.objects.exists():
        if time.monotonic() > deadline or worker.process.poll() is not None:
            sys.exit(f"the worker did not start:\n{worker.output()}")
        time.sleep(0.1)
    job = services.submit(owner, "sleep", "warm-up", {"steps": 0}, {"device": "cpu", "count": 1})
    wait_done(job.pk)


def app_run(owner, dataset: Path, args: argparse.Namespace) -> Run:
    from jobs import services
    from jobs.models import Status
    from trainer import eventkinds, events

    device = {"device": "gpu", "count": 1} if args.gpu else {"device": "cpu", "count": 1}
    start = time.perf_counter()
    job = services.submit(owner, "train", "bench", params(dataset, args, snapshot_interval=args.epochs), device)
    wait_done(job.pk)
    wall = time.perf_counter() - start
    job.refresh_from_db()
    if job.status != Status.DONE:
        sys.exit(f"the app's run ended {job.status}: {job.error}")
    log = events.read_all(job.folder)
    result = next(e["data"] for e in reversed(log) if e["kind"] == eventkinds.RESULT)
    rates = [e["data"]["images_per_s"] for e in log if e["kind"] == eventkinds.PERF]
    return Run(median(rates), result["images_per_s"], wall, result["final"].get("val_top1", 0.0))


def ddp_run(dataset: Path, args: argparse.Namespace, processes: int) -> dict:
    """The trainer by itself (no worker) with 1 or N processes, same global batch."""
    from trainer import events

    folder = Path(tempfile.mkdtemp(prefix="digitslike-ddp-"))
    config = params(dataset, args, batch_size=args.batch // processes, scale_lr=False, snapshot_interval=args.epochs)
    (folder / "config.json").write_text(json.dumps({**config, "job_id": 0, "devices": []}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not args.gpu:
        env["OMP_NUM_THREADS"] = str(max(1, args.threads // processes))
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"] if processes > 1 else []
    done = subprocess.run([sys.executable, *launcher, "-m", "trainer.train", "config.json"], cwd=folder, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the trainer with {processes} process(es) failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return next(e["data"] for e in reversed(events.read_all(folder)) if e["kind"] == "result")


def spread(values: list[float]) -> str:
    return f"{median(values):.3f}x (range {min(values):.3f} to {max(values):.3f})"


def print_pairs(args: argparse.Namespace, dataset: Path, apps: list[Run], plains: list[Run]) -> None:
    import torch

    load = os.getloadavg()
    device = torch.cuda.get_device_name() if args.gpu else f"CPU, {args.threads} torch threads on both sides"
    print(f"machine: {machine()}, {device}; load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{args.workload}: {args.network}, {args.epochs} epochs, batch {args.batch}, {args.solver}, {args.precision}, "
          f"dataset {dataset.name}, {len(apps)} alternated pairs")
    for number, (app, plain) in enumerate(zip(apps, plains, strict=True), 1):
        print(f"pair {number}: app {app.rate:8.0f} images/s, {app.wall:6.2f} s; plain {plain.rate:8.0f} images/s, "
              f"{plain.wall:6.2f} s; ratios {app.rate / plain.rate:.3f}x, {app.wall / plain.wall:.3f}x")
    print(f"val top-1: app {apps[-1].val_top1:.4f}, plain {plains[-1].val_top1:.4f}")
    pairs = list(zip(apps, plains, strict=True))
    print(f"training throughput app/plain: {spread([a.rate / p.rate for a, p in pairs])} (aim >= 0.97); "
          f"whole-run throughput {spread([a.whole_rate / p.whole_rate for a, p in pairs])}")
    print(f"wall clock app/plain: {spread([a.wall / p.wall for a, p in pairs])} (aim <= 1.10); "
          f"app median {median(a.wall for a in apps):.2f} s, plain {median(p.wall for p in plains):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="lenet")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--dataset", type=Path, help="a built dataset folder with raw storage")
    parser.add_argument("--pairs", type=int, default=5, help="alternated app/plain pairs")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of both sides")
    parser.add_argument("--ddp", action="store_true", help="also compare 2 processes with 1")
    args = parser.parse_args()
    work = WORKLOADS[args.workload]
    args.network, args.solver, args.lr = work.network, work.solver, work.lr
    args.epochs, args.batch = args.epochs or work.epochs, args.batch or work.batch
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # read by torch in the worker's jobs and the plain loop

    import torch

    args.gpu = torch.cuda.is_available()
    stack = Stack()
    try:
        dataset = args.dataset or make_workload_dataset(stack.folder / args.workload, work)
        owner = stack.user()
        warm_worker(owner, stack.start_worker())
        apps, plains = [], []
        for number in range(args.pairs):  # the side that goes first alternates, so drifts hit both alike
            if number % 2:
                plains.append(plain_run(dataset, args))
                apps.append(app_run(owner, dataset, args))
            else:
                apps.append(app_run(owner, dataset, args))
                plains.append(plain_run(dataset, args))
        print_pairs(args, dataset, apps, plains)
        if args.ddp:
            one, two = ddp_run(dataset, args, 1), ddp_run(dataset, args, 2)
            print(f"DDP: 1 process {one['images_per_s']:.0f} images/s, 2 processes {two['images_per_s']:.0f} images/s, "
                  f"ratio {two['images_per_s'] / one['images_per_s']:.2f}x")
    finally:
        stack.close()


if __name__ == "__main__":
    main()
