"""CIFAR-10 speed run through the app, as a user does it.

Imports the CIFAR-10 JPEG folders (``cifar10/train``, ``cifar10/test`` in the
archive) as a 32×32 raw dataset with the test images as the validation split,
then creates a model with the New model form's fields: the speed-run preset
(airbench94, ``training.presets``), or the baseline this benchmark used
before (the fast network with Nesterov SGD and a one-cycle schedule), or
both on the same import with their ratio. Prints the import time, the time
from "create" to the result, the training time and the accuracy reached.

    .venv/bin/python bench/cifar_speedrun.py [--archive PATH] [--train-per-class N] [--epochs E]
        [--recipe airbench|baseline|both] [--seed S] [--precision fp32|bf16]

On a GPU the defaults are the full set and the preset's 10 epochs in bf16; on
the CPU use fp32 and a short budget, e.g. ``--train-per-class 1000
--val-per-class 200 --epochs 2 --recipe both``.
"""

from __future__ import annotations

import argparse
import tarfile
import time
from pathlib import Path

from stack import ROOT, Stack, machine

ARCHIVE = ROOT.parent / "shared" / "data" / "cifar10-jpg.tar.gz"


def wait_done(job_id: int) -> float:
    from jobs.models import Job, Status

    while (job := Job.objects.get(pk=job_id)).status not in (Status.DONE, Status.FAILED, Status.ABORTED):
        time.sleep(0.05)
    if job.status != Status.DONE:
        raise SystemExit(f"job {job.pk} ended {job.status}: {job.error}")
    return time.perf_counter()


def import_dataset(stack: Stack, owner, args: argparse.Namespace) -> int:
    from datasets.forms import DatasetForm

    imports = stack.folder / "data" / "imports"
    imports.mkdir(parents=True, exist_ok=True)
    with tarfile.open(args.archive) as tar:
        tar.extractall(imports, filter="data")
    form = DatasetForm({
        "name": "CIFAR-10", "source": "folder", "train_folder": str(imports / "cifar10" / "train"),
        "val_folder": str(imports / "cifar10" / "test"), "val_max_per_class": args.val_per_class or "",
        "image_type": "color", "width": 32, "height": 32, "resize_mode": "squash", "val_percent": 0,
        "test_percent": 0, "min_per_class": 1, "max_per_class": args.train_per_class or "", "encoding": "none",
        "quality": 90, "seed": 1, "mean": True,
    })
    if not form.is_valid():
        raise SystemExit(f"dataset form: {form.errors.as_text()}")
    start = time.perf_counter()
    job = form.submit(owner)
    print(f"dataset import: {wait_done(job.pk) - start:.1f} s")
    return job.pk


# The settings this benchmark used before the airbench recipe was complete:
# the fast network with plain Nesterov SGD and a one-cycle schedule.
BASELINE = {
    "network_source": "standard", "standard_network": "fastnet", "solver": "nesterov", "lr": "0.4", "momentum": 0.85,
    "weight_decay": 5e-4, "lr_policy": "onecycle", "flip": "horizontal", "translate": 2, "label_smoothing": 0.2,
    "mean": "pixel",
}


def train(owner, dataset: int, recipe: str, args: argparse.Namespace) -> dict:
    """One model of ``recipe`` (``airbench``: the form's speed-run preset;
    ``baseline``: the settings above); returns its result event."""
    from trainer import eventkinds, eventlog
    from training.forms import NewModelForm
    from training.jsondata import api_data
    from training.presets import SPEEDRUN

    gpu = args.precision != "fp32"
    chosen = dict(SPEEDRUN) if recipe == "airbench" else {**BASELINE, "batch_size": str(args.batch)}
    epochs = args.epochs or chosen.get("epochs") or SPEEDRUN["epochs"]
    fields = {
        **chosen, "dataset": dataset, "name": recipe, "epochs": epochs, "val_interval": epochs,
        "snapshot_interval": epochs, "precision": args.precision, "channels_last": gpu,
        "device": "gpu" if gpu else "cpu", "seed": args.seed,
    }
    form = NewModelForm(api_data(NewModelForm, fields), user=owner)
    if not form.is_valid():
        raise SystemExit(f"model form: {form.errors.as_text()}")
    start = time.perf_counter()
    job = form.submit(owner)[0]
    finished = wait_done(job.pk)
    result = next(e["data"] for e in reversed(eventlog.read_all(job.folder)) if e["kind"] == eventkinds.RESULT)
    print(f"{recipe}: fastnet, {epochs} epochs, batch {fields['batch_size']}, {args.precision}, seed {args.seed}: "
          f"training {result['train_seconds']:.1f} s ({result['images_per_s']:.0f} images/s), "
          f"create → result {finished - start:.1f} s, val (CIFAR-10 test) top-1 {result['final']['val_top1']:.4f}",
          flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, default=ARCHIVE)
    parser.add_argument("--train-per-class", type=int, default=0, help="0: all 5,000")
    parser.add_argument("--val-per-class", type=int, default=0, help="0: all 1,000 test images")
    parser.add_argument("--epochs", type=int, default=0, help="0: the preset's (10); the baseline's too")
    parser.add_argument("--batch", type=int, default=1024, help="the baseline's batch size")
    parser.add_argument("--recipe", choices=("airbench", "baseline", "both"), default="airbench",
                        help="both: the baseline, then the preset, on the same import, with their ratio")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", default="bf16", help="fp32 on the CPU")
    args = parser.parse_args()
    stack = Stack()
    try:
        owner = stack.user()
        stack.start_worker()
        print(f"machine: {machine()}", flush=True)
        dataset = import_dataset(stack, owner, args)
        recipes = ("baseline", "airbench") if args.recipe == "both" else (args.recipe,)
        results = {recipe: train(owner, dataset, recipe, args) for recipe in recipes}
        if len(results) == 2:
            before, after = results["baseline"], results["airbench"]
            print(f"airbench / baseline: top-1 {after['final']['val_top1'] / before['final']['val_top1']:.3f}×, "
                  f"training time {after['train_seconds'] / before['train_seconds']:.2f}×")
    finally:
        stack.close()


if __name__ == "__main__":
    main()
