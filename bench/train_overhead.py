"""How much does the app cost a training run, as a user gets it?

The app's side is a model created through the API of the app as ``make
run`` starts it (``bench/launched.py``: the launcher's worker, web server,
model server and Redis all running), on a dataset uploaded through the API
as an archive and built with raw storage. Its figures are the ones the job
reports to its user: the result's images/s (the training time after the
first ``WARMUP_STEPS`` batches, validation and snapshots left out) and the
wall clock from the job's creation to its end (the API's ``created_at`` and
``finished_at``). The job runs with the torch threads and environment the
worker gives it; nothing here sets them.

The plain side is ``bench/plain_train.py``: the same recipe written by
hand in the shape of torchvision's reference script, on the dataset the app
built, started as the worker starts a job (a session of its own and the
environment the worker passes on, so it gets the same thread count). Its
throughput counts the same batches the app's does; its wall clock is the
process's start to its exit.

The two alternate in pairs, the side that goes first alternating too, and
each pair gives a ratio, so that the machine's drifts hit both sides of a
pair alike. Printed: both sides' torch threads, each pair, and the median
of the per-pair ratios with their range. Aims: throughput app/plain ≥ 0.97
and wall clock ≤ 1.05. A throughput ratio above about 1.03 means the two
sides are not doing the same work: a defect of this benchmark until
explained.

Workloads:

- ``resnet18`` (the default): CIFAR-10 JPEGs from ``../shared/data``
  (``--per-class`` of each class, 367 by default: 3,670 images, 20% of
  them for validation) built at 64×64; ResNet-18, 2 epochs, batch 64, SGD
  with momentum, learning rate 0.05, step policy, horizontal flips, mean
  image;
- ``lenet``: generated 28×28 grayscale bars, four classes (1,125 images a
  class), 2 epochs, batch 128, Nesterov SGD, cosine policy, no flips.

    .venv/bin/python bench/train_overhead.py [--workload resnet18|lenet] [--pairs 3]
        [--epochs E] [--batch B] [--per-class N] [--precision fp32|bf16] [--watch] [--ddp]

``--watch`` shows each app run's job page in a headless Chromium
(``/usr/bin/chromium``) on the same machine, as a user watching it, and
prints the CPU the browser used. ``--ddp`` also runs the trainer by itself under torchrun with two
processes (gloo on the CPU, NCCL on GPUs) against one, on the same global
batch.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import median

import numpy as np
from launched import CIFAR, LaunchedApp, cifar_archive
from PIL import Image
from stack import ROOT, machine

from trainer import environment, eventkinds, eventlog, jobfiles
from trainer.train import WARMUP_STEPS


@dataclass(frozen=True)
class Workload:
    network: str
    solver: str
    policy: str
    flip: str
    epochs: int
    batch: int
    lr: float
    per_class: int
    size: int
    channels: int


WORKLOADS = {
    "resnet18": Workload("resnet18", "momentum", "step", "horizontal", 2, 64, 0.05, 367, 64, 3),
    "lenet": Workload("lenet", "nesterov", "cosine", "none", 2, 128, 0.02, 1125, 28, 1),
}


@dataclass
class Run:
    """One run of either side."""

    rate: float    # images/s of the training after the warm-up batches
    wall: float    # seconds
    threads: int   # torch threads
    val_top1: float
    stack_cpu: dict[str, float] | None = None  # the app's side: CPU seconds its other processes used meanwhile


def bars_archive(target: Path, work: Workload) -> Path:
    """A tar.gz of generated bar images (PNG) in class folders."""
    from tests.trainfiles import CLASSES, bars

    rng = np.random.default_rng(0)
    with tarfile.open(target, "w:gz") as out:
        for label, name in enumerate(CLASSES):
            for number in range(work.per_class):
                data = io.BytesIO()
                Image.fromarray(bars(label, work.size, rng)).save(data, format="PNG")
                info = tarfile.TarInfo(f"bars/{name}/{number:05d}.png")
                info.size = data.tell()
                data.seek(0)
                out.addfile(info, data)
    return target


def upload(app: LaunchedApp, args: argparse.Namespace) -> Path:
    """Import the workload's images through the API; the built dataset's folder."""
    work = args.work
    if args.workload == "lenet":
        archive = bars_archive(app.folder / "images.tar.gz", work)
    else:
        if not CIFAR.exists():
            sys.exit(f"the resnet18 workload needs {CIFAR}")
        archive, _ = cifar_archive(app.folder / "images.tar.gz", args.per_class, 0)
    fields = {"name": args.workload, "source": "archive", "image_type": "color" if work.channels == 3 else "grayscale",
              "width": str(work.size), "height": str(work.size), "resize_mode": "squash", "val_percent": "20",
              "test_percent": "0", "encoding": "none"}
    with open(archive, "rb") as handle:
        job = app.call("POST", "/api/datasets", data=fields, files={"archive": (archive.name, handle)}).json()
    app.wait_job(job["id"], 1800)
    args.dataset_job = job["id"]
    return app.job_folder(job["id"]) / jobfiles.DATASET


def stack_cpu_seconds(app: LaunchedApp) -> dict[str, float]:
    """CPU seconds used so far by each of the launcher's services (with their
    children, the job processes left out): what the app runs beside a job."""
    children: dict[int, list[int]] = {}
    command: dict[int, str] = {}
    seconds: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        seconds[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    found: dict[str, float] = {"launcher": seconds.get(app.process.pid, 0.0)}
    for service in children.get(app.process.pid, []):
        name = next((n for n in ("worker", "modelserver", "uvicorn", "redis") if n in command.get(service, "")), "other")
        stack, total = [service], 0.0
        while stack:
            pid = stack.pop()
            if "trainer.train" in command.get(pid, "") or "procgroup" in command.get(pid, ""):
                continue  # the job's own processes
            total += seconds.get(pid, 0.0)
            stack.extend(children.get(pid, []))
        found[name] = found.get(name, 0.0) + total
    return found


def process_cpu_seconds(marker: bytes) -> float:
    """CPU seconds used so far by the processes whose command line holds ``marker``."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes():
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            continue
    return total


class Watcher:
    """A headless Chromium signed in as the benchmark's user, showing a job's page."""

    def __init__(self, app: LaunchedApp) -> None:
        from playwright.sync_api import sync_playwright

        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                                       args=["--no-sandbox", "--disable-gpu"])
        context = self.browser.new_context(base_url=app.url)
        context.add_cookies([{"name": c.name, "value": c.value, "url": app.url} for c in app.http.cookies.jar])
        self.page = context.new_page()

    def show(self, job_id: int | None) -> None:
        self.page.goto(f"/jobs/{job_id}/" if job_id else "about:blank")

    def close(self) -> None:
        self.browser.close()
        self.playwright.stop()


def app_run(app: LaunchedApp, args: argparse.Namespace, watcher: Watcher | None) -> Run:
    work = args.work
    params = {"name": "bench", "dataset": args.dataset_job, "network_source": "standard",
              "standard_network": work.network, "epochs": args.epochs, "batch_size": str(args.batch),
              "lr": str(work.lr), "lr_policy": work.policy, "solver": work.solver, "flip": work.flip, "mean": "image",
              "precision": args.precision, "seed": 1, "device": "gpu" if args.gpu else "cpu"}
    before = stack_cpu_seconds(app)
    browser_before = process_cpu_seconds(b"chromium")
    job_id = app.call("POST", "/api/models", json=params).json()["jobs"][0]["id"]
    if watcher:
        watcher.show(job_id)
    # A slow poll, loading the web server little: the wall clock is the job's own record.
    job = app.wait_job(job_id, 3600, poll=5.0)
    after = stack_cpu_seconds(app)
    if watcher:  # measured before the page is left: its renderer process may end with it
        after["browser"] = process_cpu_seconds(b"chromium") - browser_before
        watcher.show(None)
    wall = (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["created_at"])).total_seconds()
    result = app.events(job_id, eventkinds.RESULT)[-1]["data"]
    threads = app.events(job_id, eventkinds.HARDWARE)[0]["data"]["threads"]
    return Run(result["images_per_s"], wall, threads, result["final"].get("val_top1", 0.0),
               {name: after[name] - before.get(name, 0.0) for name in after} | {"browser": after.get("browser", 0.0)})


def plain_script(script: str, dataset: Path, recipe: dict, threads: dict[str, str] | None = None) -> tuple[dict, float]:
    """``bench/<script> DATASET OUT RECIPE`` run in a job's environment
    (with ``threads``' variables where given) in a folder of its own; its
    last line's JSON and its wall-clock seconds. Exits with its error if it fails."""
    out = Path(tempfile.mkdtemp(prefix="digitslike-plain-"))
    env = {**environment.allowed(os.environ), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **(threads or {})}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), str(dataset), str(out), json.dumps(recipe)],
                          capture_output=True, text=True, cwd=out, env=env, start_new_session=True)
    wall = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode:
        sys.exit(f"the plain loop failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def plain_run(dataset: Path, args: argparse.Namespace) -> Run:
    work = args.work
    recipe = {"network": work.network, "epochs": args.epochs, "batch": args.batch, "lr": work.lr,
              "solver": work.solver, "policy": work.policy, "flip": work.flip, "mean": "image",
              "precision": args.precision, "warmup_steps": WARMUP_STEPS}
    result, wall = plain_script("plain_train.py", dataset, recipe)
    return Run(result["images_per_s"], wall, result["threads"], result["val_top1"])


def ddp_run(dataset: Path, args: argparse.Namespace, processes: int) -> dict:
    """The trainer by itself (no worker) with 1 or N processes, same global batch."""
    from tests.trainfiles import train_config

    work = args.work
    folder = Path(tempfile.mkdtemp(prefix="digitslike-ddp-"))
    config = train_config(dataset, network={"source": "standard", "name": work.network}, epochs=args.epochs,
                          batch_size=args.batch // processes, lr=work.lr, precision=args.precision, seed=0,
                          lr_policy={"name": "cosine"}, solver=work.solver, scale_lr=False,
                          snapshot_interval=args.epochs)
    (folder / jobfiles.CONFIG).write_text(json.dumps({**config, "job_id": 0, "devices": []}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"] if processes > 1 else []
    done = subprocess.run([sys.executable, *launcher, "-m", "trainer.train", jobfiles.CONFIG], cwd=folder, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the trainer with {processes} process(es) failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return next(e["data"] for e in reversed(eventlog.read_all(folder)) if e["kind"] == eventkinds.RESULT)


def spread(values: list[float]) -> str:
    return f"{median(values):.3f}x (range {min(values):.3f} to {max(values):.3f})"


def print_pairs(args: argparse.Namespace, apps: list[Run], plains: list[Run]) -> None:
    import torch

    load = os.getloadavg()
    device = torch.cuda.get_device_name() if args.gpu else "CPU"
    work = args.work
    print(f"machine: {machine()}, {device}; load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{args.workload}: {work.network} at {work.size}x{work.size}, {args.epochs} epochs, batch {args.batch}, "
          f"{work.solver}, lr {work.lr:g}, {work.policy} policy, flip {work.flip}, mean image, {args.precision}; "
          f"{len(apps)} alternated pairs" + (", a browser showing the app's job page" if args.watch else ""))
    print(f"torch threads: app's job {sorted({a.threads for a in apps})}, plain loop {sorted({p.threads for p in plains})}")
    for number, (app, plain) in enumerate(zip(apps, plains, strict=True), 1):
        print(f"pair {number}: app {app.rate:8.1f} images/s, {app.wall:6.2f} s; plain {plain.rate:8.1f} images/s, "
              f"{plain.wall:6.2f} s; ratios {app.rate / plain.rate:.3f}x, {app.wall / plain.wall:.3f}x")
    print(f"val top-1: app {apps[-1].val_top1:.4f}, plain {plains[-1].val_top1:.4f}")
    used = {name: median(a.stack_cpu.get(name, 0.0) for a in apps) for name in apps[0].stack_cpu}
    print("CPU seconds the app's other processes used during a run (median): "
          + ", ".join(f"{name} {value:.2f}" for name, value in sorted(used.items(), key=lambda kv: -kv[1]))
          + f"; {100 * sum(used.values()) / median(a.wall for a in apps):.1f}% of one core")
    pairs = list(zip(apps, plains, strict=True))
    print(f"training throughput app/plain: {spread([a.rate / p.rate for a, p in pairs])} (aim >= 0.97)")
    print(f"wall clock app/plain: {spread([a.wall / p.wall for a, p in pairs])} (aim <= 1.05); "
          f"app median {median(a.wall for a in apps):.2f} s, plain {median(p.wall for p in plains):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="resnet18")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--per-class", type=int, help="images of each class imported")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--pairs", type=int, default=3, help="alternated app/plain pairs")
    parser.add_argument("--watch", action="store_true", help="a browser shows each app run's job page")
    parser.add_argument("--ddp", action="store_true", help="also compare 2 processes with 1")
    args = parser.parse_args()
    args.work = work = WORKLOADS[args.workload]
    args.epochs, args.batch = args.epochs or work.epochs, args.batch or work.batch
    args.per_class = args.per_class or work.per_class

    import torch

    args.gpu = torch.cuda.is_available()
    folder = Path(tempfile.mkdtemp(prefix="digitslike-bench-"))
    app = LaunchedApp(folder, "bench")
    watcher = None
    try:
        app.wait_up()
        app.sign_up()
        dataset = upload(app, args)
        watcher = Watcher(app) if args.watch else None
        apps, plains = [], []
        for number in range(args.pairs):  # the side that goes first alternates, so drifts hit both alike
            if number % 2:
                plains.append(plain_run(dataset, args))
                apps.append(app_run(app, args, watcher))
            else:
                apps.append(app_run(app, args, watcher))
                plains.append(plain_run(dataset, args))
        print_pairs(args, apps, plains)
        if args.ddp:
            one, two = ddp_run(dataset, args, 1), ddp_run(dataset, args, 2)
            print(f"DDP: 1 process {one['images_per_s']:.0f} images/s, 2 processes {two['images_per_s']:.0f} images/s, "
                  f"ratio {two['images_per_s'] / one['images_per_s']:.2f}x")
    finally:
        if watcher:
            watcher.close()
        app.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
