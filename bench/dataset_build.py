"""How fast does a dataset build, and does its memory stay flat?

Generates JPEGs of mixed sizes (64 to 640 pixels a side) in class folders,
then builds them the way a worker does (``python -m trainer.dataset_build``,
a process pool over every core, streaming into the packed store) resized to
32×32 and to 256×256. The baseline, in the same run: a plain single-process
Pillow loop doing the same decode and resize. Prints images/s for both and
their ratio, and the build's peak memory (all its processes together) at two
image counts.

    .venv/bin/python bench/dataset_build.py [--images 20000] [--memory-counts 10000 40000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image
from stack import ROOT, machine

CLASSES = 10


def make_images(folder: Path, count: int, seed: int = 0) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        width, height = rng.randint(64, 640), rng.randint(64, 640)
        colour = tuple(rng.randrange(256) for _ in range(3))
        image = Image.new("RGB", (width, height), colour)
        image.paste(tuple(255 - c for c in colour), (width // 4, height // 4, width // 2, height // 2))
        path = folder / f"c{i % CLASSES}" / f"{i:06d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, quality=90)
        paths.append(path)
    return paths


def tree_rss(pid: int) -> int:
    """Private resident memory (anonymous and shared-memory pages, not the page
    cache of files read or written) of a process and all its descendants, in bytes."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as f:
                total += sum(int(line.split()[1]) * 1024 for line in f if line.startswith(("RssAnon:", "RssShmem:")))
            with open(f"/proc/{current}/task/{current}/children") as f:
                stack.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def app_build(source: Path, work: Path, size: int) -> tuple[float, int]:
    """Seconds and peak memory of one build, run as the worker runs it."""
    job = work / f"build-{size}"
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir(parents=True)
    config = {"source": {"type": "folder", "train": str(source)}, "roots": [str(source)], "channels": 3,
              "width": size, "height": size, "resize_mode": "squash", "val_percent": 0, "test_percent": 0,
              "min_per_class": 1, "max_per_class": None, "encoding": "none", "quality": 90, "seed": 1, "mean": True}
    (job / "config.json").write_text(json.dumps(config))
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "trainer.dataset_build", "config.json"], cwd=job,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    if process.returncode:
        raise SystemExit(f"the build failed: see {job / 'events.jsonl'}")
    shutil.rmtree(job)
    return seconds, peak


def plain_loop(paths: list[Path], size: int) -> float:
    """The baseline: one process, open, convert, resize, keep the pixels."""
    started = time.perf_counter()
    out = np.empty((len(paths), size, size, 3), dtype=np.uint8) if size <= 64 else None
    for i, path in enumerate(paths):
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB").resize((size, size), Image.Resampling.BILINEAR))
        if out is not None:
            out[i] = pixels
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20000)
    parser.add_argument("--memory-counts", type=int, nargs=2, default=[10000, 40000])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="digitslike-bench-build-"))
    try:
        print(f"machine: {machine()}")
        paths = make_images(work / "images", args.images)
        for size in (32, 256):
            seconds, peak = app_build(work / "images", work, size)
            plain = plain_loop(paths, size)
            print(f"{size}x{size}: app {args.images / seconds:7.0f} images/s ({seconds:.1f} s, peak {peak / 2**20:.0f} MiB), "
                  f"plain loop {args.images / plain:7.0f} images/s ({plain:.1f} s); ratio app/plain {plain / seconds:.2f}x")
        for count in args.memory_counts:
            folder = work / f"memory-{count}"
            make_images(folder, count, seed=count)
            seconds, peak = app_build(folder, work, 32)
            print(f"memory at {count} images (32x32): peak {peak / 2**20:.0f} MiB over all build processes "
                  f"({count / seconds:.0f} images/s)")
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
