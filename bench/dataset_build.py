"""How fast does a dataset build, and does its memory stay flat?

Three parts, each against a plain single-process Pillow loop in the same run:

- ``folders``: JPEGs of mixed sizes (64 to 640 pixels a side) in class
  folders, built the way a worker does (``python -m trainer.dataset_build``,
  a process pool over every core, streaming into the packed store) resized
  to 32×32 and to 256×256; the loop does the same decode and resize.
- ``photos``: the import a user waits for, upload finished to dataset
  ready: photo-like JPEGs (gradients, shapes and noise, 300 to 1200 pixels a
  side) uploaded as a tar.gz and built from the archive at 64×64 and
  256×256; the loop extracts the archive, then decodes and resizes every
  file. Rounds alternate app and loop; prints medians and the spread.
- ``memory``: the build's peak private memory (all its processes) at two
  image counts.

    .venv/bin/python bench/dataset_build.py [--parts folders photos memory] [--images 20000]
        [--photos 3000] [--rounds 3] [--memory-counts 10000 40000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image
from stack import ROOT, machine

from trainer import jobfiles

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


def make_photos(folder: Path, count: int, seed: int = 0) -> None:
    """Photo-like JPEGs of 300 to 1200 pixels a side: a colour gradient, a few shapes and
    sensor-like noise, at quality 90, in class folders."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        width, height = (int(v) for v in rng.integers(300, 1201, 2))
        ramp_x, ramp_y = np.linspace(0, 1, width)[None, :, None], np.linspace(0, 1, height)[:, None, None]
        pixels = rng.integers(0, 256, 3) * (1 - ramp_x) + rng.integers(0, 256, 3) * ramp_y
        for _ in range(3):
            x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
            pixels[y:y + height // 3, x:x + width // 3] = rng.integers(0, 256, 3)
        pixels += rng.normal(0, 10, (height, width, 1))
        path = folder / f"class{i % CLASSES}" / f"photo{i:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path, quality=90)


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
    """Seconds and peak memory of one build from a folder (or, given a file, an uploaded archive),
    run as the worker runs it."""
    job = work / f"build-{size}"
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir(parents=True)
    origin = {"type": "archive", "path": str(source)} if source.is_file() else {"type": "folder", "train": str(source)}
    config = {"source": origin, "roots": [str(source)], "channels": 3,
              "width": size, "height": size, "resize_mode": "squash", "val_percent": 0, "test_percent": 0,
              "min_per_class": 1, "max_per_class": None, "encoding": "none", "quality": 90, "seed": 1, "mean": True}
    (job / jobfiles.CONFIG).write_text(json.dumps(config))
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "trainer.dataset_build", jobfiles.CONFIG], cwd=job,
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


def plain_import(archive: Path, work: Path, size: int) -> float:
    """The baseline import: extract the archive, then the plain loop over its files."""
    started = time.perf_counter()
    folder = work / "extracted"
    with tarfile.open(archive) as opened:
        opened.extractall(folder, filter="data")
    plain_loop(sorted(p for p in folder.rglob("*") if p.is_file()), size)
    seconds = time.perf_counter() - started
    shutil.rmtree(folder)
    return seconds


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} (range {min(values):.2f} to {max(values):.2f})"


def folders_part(work: Path, images: int) -> None:
    paths = make_images(work / "images", images)
    for size in (32, 256):
        seconds, peak = app_build(work / "images", work, size)
        plain = plain_loop(paths, size)
        print(f"{size}x{size}: app {images / seconds:7.0f} images/s ({seconds:.1f} s, peak {peak / 2**20:.0f} MiB), "
              f"plain loop {images / plain:7.0f} images/s ({plain:.1f} s); ratio app/plain {plain / seconds:.2f}x")
    shutil.rmtree(work / "images")


def photos_part(work: Path, photos: int, rounds: int) -> None:
    make_photos(work / "photos", photos)
    archive = work / "photos.tar.gz"
    with tarfile.open(archive, "w:gz") as opened:
        opened.add(work / "photos", arcname="photos")
    shutil.rmtree(work / "photos")
    print(f"photos: {photos} JPEGs, archive {archive.stat().st_size / 2**20:.0f} MiB")
    for size in (64, 256):
        app, plain, ratios, peaks = [], [], [], []
        for _ in range(rounds):
            seconds, peak = app_build(archive, work, size)
            baseline = plain_import(archive, work, size)
            app.append(seconds)
            plain.append(baseline)
            ratios.append(baseline / seconds)
            peaks.append(peak / 2**20)
        print(f"{size}x{size} from the tar.gz, {rounds} rounds: app {spread(app)} s "
              f"({photos / statistics.median(app):.0f} images/s, peak {max(peaks):.0f} MiB), "
              f"plain extract + loop {spread(plain)} s ({photos / statistics.median(plain):.0f} images/s); "
              f"ratio plain/app {spread(ratios)}x")


def memory_part(work: Path, counts: list[int]) -> None:
    for count in counts:
        folder = work / f"memory-{count}"
        make_images(folder, count, seed=count)
        seconds, peak = app_build(folder, work, 32)
        print(f"memory at {count} images (32x32): peak {peak / 2**20:.0f} MiB over all build processes "
              f"({count / seconds:.0f} images/s)")
        shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=("folders", "photos", "memory"),
                        default=["folders", "photos", "memory"])
    parser.add_argument("--images", type=int, default=20000)
    parser.add_argument("--photos", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory-counts", type=int, nargs=2, default=[10000, 40000])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="digitslike-bench-build-"))
    try:
        print(f"machine: {machine()}")
        if "folders" in args.parts:
            folders_part(work, args.images)
        if "photos" in args.parts:
            photos_part(work, args.photos, args.rounds)
        if "memory" in args.parts:
            memory_part(work, args.memory_counts)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
