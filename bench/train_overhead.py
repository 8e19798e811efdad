"""How much does the app cost a training run?

Trains the same network on the same packed dataset for the same epochs twice
in one run: through the app (a real worker; submit → done) and with the plain
PyTorch loop in ``bench/plain_train.py``. Prints the training-phase
throughput ratio (aim ≥ 0.95) and the whole-job wall-clock ratio (aim ≤ 1.10).
``--ddp`` also runs the trainer under torchrun with two processes (gloo on
the CPU, NCCL on GPUs) against one process on the same global batch.

    .venv/bin/python bench/train_overhead.py [--network lenet] [--images 20000] [--epochs 3]
        [--batch 128] [--precision fp32|bf16] [--dataset DIR] [--ddp]

Without ``--dataset`` it generates the bars dataset of the tests (28×28
grayscale, four classes); give a built dataset folder (raw storage) to use
real data, e.g. CIFAR-10 imported through the app.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from stack import ROOT, Stack, machine


def plain_run(dataset: Path, args: argparse.Namespace) -> tuple[dict, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "plain_train.py"), str(dataset), args.network,
                          str(args.epochs), str(args.batch), str(args.lr), args.precision],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    return json.loads(out.stdout.strip().splitlines()[-1]), wall


def params(dataset: Path, args: argparse.Namespace, **overrides) -> dict:
    from tests.trainfiles import train_config

    chosen = {"network": {"source": "standard", "name": args.network}, "epochs": args.epochs, "batch_size": args.batch,
              "lr": args.lr, "precision": args.precision, "seed": 0, "lr_policy": {"name": "cosine"},
              "solver": "nesterov"}
    return train_config(dataset, **{**chosen, **overrides})


def app_run(stack: Stack, owner, dataset: Path, args: argparse.Namespace) -> tuple[dict, float]:
    from jobs import services
    from jobs.models import Job, Status
    from trainer import events

    device = {"device": "gpu", "count": 1} if args.gpu else {"device": "cpu", "count": 1}
    start = time.perf_counter()
    job = services.submit(owner, "train", "bench", params(dataset, args, snapshot_interval=args.epochs), device)
    while Job.objects.get(pk=job.pk).status not in (Status.DONE, Status.FAILED, Status.ABORTED):
        time.sleep(0.05)  # the done transition is visible within 50 ms; polling faster costs the trainer CPU
    wall = time.perf_counter() - start
    job.refresh_from_db()
    if job.status != Status.DONE:
        sys.exit(f"the app's run ended {job.status}: {job.error}")
    result = next(e["data"] for e in reversed(events.read_all(job.folder)) if e["kind"] == "result")
    return result, wall


def ddp_run(dataset: Path, args: argparse.Namespace, processes: int) -> dict:
    """The trainer by itself (no worker) with 1 or N processes, same global batch."""
    from trainer import events

    folder = Path(tempfile.mkdtemp(prefix="digitslike-ddp-"))
    config = params(dataset, args, batch_size=args.batch // processes, scale_lr=False, snapshot_interval=args.epochs)
    (folder / "config.json").write_text(json.dumps({**config, "job_id": 0, "devices": []}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not args.gpu:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // processes))
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"] if processes > 1 else []
    done = subprocess.run([sys.executable, *launcher, "-m", "trainer.train", "config.json"], cwd=folder, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the trainer with {processes} process(es) failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return next(e["data"] for e in reversed(events.read_all(folder)) if e["kind"] == "result")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="lenet")
    parser.add_argument("--images", type=int, default=20000, help="training images of the generated dataset")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--dataset", type=Path, help="a built dataset folder with raw storage")
    parser.add_argument("--ddp", action="store_true", help="also compare 2 processes with 1")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of each; medians are reported")
    args = parser.parse_args()

    import torch

    args.gpu = torch.cuda.is_available()
    stack = Stack()
    try:
        from tests.trainfiles import make_dataset

        dataset = args.dataset or make_dataset(stack.folder / "bars", {"train": args.images // 4, "val": 500, "test": 0})
        owner = stack.user()
        stack.start_worker()
        plains, apps = [], []
        for _ in range(args.repeats):  # alternated, so drifts in the machine's speed hit both alike
            plains.append(plain_run(dataset, args))
            apps.append(app_run(stack, owner, dataset, args))
        plain_rate = median([p["images_per_s"] for p, _ in plains])
        app_rate = median([a["images_per_s"] for a, _ in apps])
        plain_wall, app_wall = median([w for _, w in plains]), median([w for _, w in apps])
        device = torch.cuda.get_device_name() if args.gpu else "CPU"
        print(f"machine: {machine()}, {device}")
        print(f"{args.network}, {args.epochs} epochs, batch {args.batch}, {args.precision}, dataset {dataset.name}, "
              f"medians of {args.repeats} alternated runs")
        print(f"app:   {app_rate:9.0f} images/s training, whole job {app_wall:6.2f} s (submit to done), "
              f"val top-1 {apps[-1][0]['final'].get('val_top1', 0):.4f}")
        print(f"plain: {plain_rate:9.0f} images/s training, whole run {plain_wall:6.2f} s (process start to exit), "
              f"val top-1 {plains[-1][0]['val_top1']:.4f}")
        print(f"ratio app/plain: training throughput {app_rate / plain_rate:.3f}x (aim >= 0.95), "
              f"wall clock {app_wall / plain_wall:.3f}x (aim <= 1.10)")
        if args.ddp:
            one, two = ddp_run(dataset, args, 1), ddp_run(dataset, args, 2)
            print(f"DDP: 1 process {one['images_per_s']:.0f} images/s, 2 processes {two['images_per_s']:.0f} images/s, "
                  f"ratio {two['images_per_s'] / one['images_per_s']:.2f}x")
    finally:
        stack.close()


if __name__ == "__main__":
    main()
