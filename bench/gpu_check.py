"""Does the GPU path work on this machine, and how fast is it? One command:

    .venv/bin/python bench/gpu_check.py [--network resnet18] [--images 20000] [--epochs 3] [--batch 256]

With NVIDIA GPUs it starts a throwaway stack (``bench/stack.py``: its own
Redis, database and data folder, and a real worker) and runs through the
worker, as a user's jobs run: the device check on one GPU, then the same
training job on one GPU and on every GPU (DDP, one process each, the same
batch per process), both in bf16 with channels-last and ``torch.compile``;
then a detector, Faster R-CNN MobileNetV3-Large FPN, on one GPU in bf16 (not
compiled: its proposals change shape every step) on generated rectangles at
``--detection-size`` pixels. It prints the device check's rate, each job's
throughput (warm-up left out) and MFU, the scaling ratio (all GPUs against
N times one) and every error; the exit status is 1 when a job failed.
Without a GPU it says so and exits 0.

For scale, torchvision's reference recipe reports about 157 images/s for
this detector on 8 V100s at batch 2 per GPU and 800-pixel images (about 20
a GPU): not the same images, so a sanity check, not a comparison.
"""

from __future__ import annotations

import argparse
import sys
import time

from stack import Stack, machine

from trainer import eventkinds, gpus

JOB_TIMEOUT_SECONDS = 1800
DEVICE_CHECK = {"seconds": 10.0, "size": 8192}


def run_job(owner, kind: str, name: str, params: dict, count: int) -> dict:
    """Submit a job for ``count`` GPUs and wait for it; its status, error and events."""
    from jobs import services
    from jobs.models import Job, Status
    from trainer import eventlog

    job = services.submit(owner, kind, name, params, {"device": "gpu", "count": count})
    deadline = time.monotonic() + JOB_TIMEOUT_SECONDS
    ended = (Status.DONE, Status.FAILED, Status.ABORTED)
    while (job := Job.objects.get(pk=job.pk)).status not in ended and time.monotonic() < deadline:
        time.sleep(0.5)
    logged = eventlog.read_all(job.folder)

    def last(event_kind: str) -> dict:
        return next((e["data"] for e in reversed(logged) if e["kind"] == event_kind), {})

    error = job.error or ("" if job.status in ended else f"still {job.status} after {JOB_TIMEOUT_SECONDS} s")
    return {"ok": job.status == Status.DONE, "status": job.status, "error": error, "result": last(eventkinds.RESULT),
            "perf": last(eventkinds.PERF), "log": last(eventkinds.LOG).get("lines", [])[-5:]}


def training_params(dataset, args: argparse.Namespace) -> dict:
    from tests.trainfiles import train_config

    return train_config(dataset, network={"source": "standard", "name": args.network}, epochs=args.epochs,
                        batch_size=args.batch, scale_lr=False, lr=0.05, precision="bf16", channels_last=True,
                        compile=True, snapshot_interval=args.epochs)


def detection_params(dataset, args: argparse.Namespace) -> dict:
    from tests.detectionfiles import detection_config

    return detection_config(dataset, epochs=args.epochs, batch_size=args.detection_batch, precision="bf16",
                            snapshot_interval=args.epochs, mean="none")


def describe(name: str, outcome: dict) -> str:
    if not outcome["ok"]:
        return f"{name}: {outcome['status'].upper()}: {outcome['error']}"
    result, perf = outcome["result"], outcome["perf"]
    if "gflops" in result:
        return f"{name}: {result['gflops']:.0f} GFLOP/s on {result['device']}"
    mfu = f"{perf['mfu']:.1%}" if perf.get("mfu") is not None else "n/a (GPU not in the peak table)"
    final = result["final"]
    metric = (f"val top-1 {final['val_top1']:.3f}" if "val_top1" in final
              else f"val mAP@0.5 {final.get('val_map50', 0):.3f}")
    return (f"{name}: {result['images_per_s']:.0f} images/s, MFU {mfu}, {result['train_seconds']:.1f} s timed "
            f"after {result['warmup_seconds']:.1f} s of warm-up, {metric}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet18")
    parser.add_argument("--images", type=int, default=20000, help="training images of the generated dataset")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256, help="per GPU")
    parser.add_argument("--detection-images", type=int, default=2000)
    parser.add_argument("--detection-size", type=int, default=320, help="the detection images' side, in pixels")
    parser.add_argument("--detection-batch", type=int, default=8)
    args = parser.parse_args()

    if not gpus.nvml_ready() or gpus.count() == 0:
        print("No NVIDIA GPU on this machine (NVML finds no driver or no board): nothing to check.")
        return 0
    stack = Stack()
    try:
        from jobs.devices import gpus as leasable
        from tests.detectionfiles import built_rectangles
        from tests.trainfiles import make_dataset

        count = sum(1 for d in leasable() if d["kind"] == "gpu")
        if count == 0:
            print("Every GPU here is refused by the worker (MIG slices): nothing to check.")
            return 0
        dataset = make_dataset(stack.folder / "bars", {"train": args.images // 4, "val": 500, "test": 500})
        owner = stack.user()
        stack.start_worker()
        outcomes = {"device check (1 GPU)": run_job(owner, "devicecheck", "gpu check", DEVICE_CHECK, 1),
                    "training, 1 GPU": run_job(owner, "train", "gpu check 1", training_params(dataset, args), 1)}
        if count > 1:
            outcomes[f"training, {count} GPUs (DDP)"] = run_job(owner, "train", f"gpu check {count}",
                                                               training_params(dataset, args), count)
        boxes = built_rectangles(stack.folder / "rectangles", args.detection_images, seed=1, size=args.detection_size)
        outcomes["detection, 1 GPU"] = run_job(owner, "train", "gpu check detection", detection_params(boxes, args), 1)
    finally:
        stack.close()

    print(f"machine: {machine()}, {count} leasable GPU(s)")
    print(f"{args.network} on generated 28x28 images, {args.epochs} epochs, batch {args.batch} per GPU, "
          "bf16, channels-last, compiled")
    print(f"detection: Faster R-CNN MobileNetV3-Large FPN on {args.detection_images} generated "
          f"{args.detection_size}x{args.detection_size} images, batch {args.detection_batch}, bf16")
    for name, outcome in outcomes.items():
        print(describe(name, outcome))
    single, every = outcomes["training, 1 GPU"], outcomes.get(f"training, {count} GPUs (DDP)")
    if every and single["ok"] and every["ok"]:
        ratio = every["result"]["images_per_s"] / (count * single["result"]["images_per_s"])
        print(f"scaling: {count} GPUs at {ratio:.2f} of {count} x one GPU's throughput")
    failed = [name for name, outcome in outcomes.items() if not outcome["ok"]]
    for name in failed:
        print(f"error in {name}; its last log lines:", *outcomes[name]["log"], sep="\n  ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
