"""The build run in this process (``trainer.dataset_build``, its real pool):
an uploaded archive is read in place and builds exactly the dataset its
folders build, hostile archives are refused with nothing written, and memory
stays flat however large the archive."""

from __future__ import annotations

import hashlib
import io
import json
import multiprocessing
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.datasetfiles import tar_of
from trainer import build_pool
from trainer.dataset_build import TASKS_PER_BATCH, main
from trainer.datastore import SplitReader
from trainer.targets import ClassLabels

CONFIG = {"channels": 3, "width": 24, "height": 16, "resize_mode": "half_crop", "val_percent": 25, "test_percent": 10,
          "min_per_class": 1, "max_per_class": None, "encoding": "none", "quality": 90, "seed": 3, "mean": True}


def photo(rng: np.random.Generator, width: int, height: int) -> bytes:
    """A JPEG with a gradient and noise, so resizing and draft decoding have detail to work on."""
    ramp = np.linspace(0, 1, width)[None, :, None] * rng.integers(0, 256, 3) + rng.normal(0, 12, (height, width, 3))
    out = io.BytesIO()
    Image.fromarray(np.clip(ramp, 0, 255).astype(np.uint8)).save(out, format="JPEG", quality=85)
    return out.getvalue()


def photo_folders(root: Path, per_class: int = 7) -> Path:
    rng = np.random.default_rng(0)
    for name in ("cats", "dogs", "owls"):
        for n in range(per_class):
            path = root / name / ("nested" if n % 3 == 0 else "") / f"{n:02d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(photo(rng, int(rng.integers(20, 200)), int(rng.integers(20, 200))))
    (root / "owls" / "broken.jpg").write_bytes(b"not an image")
    (root / "owls" / ".hidden.jpg").write_bytes(b"left out")
    return root


def zip_of(folder: Path, archive: Path, arcroot: str = "") -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as opened:
        for path in sorted(folder.rglob("*")):
            opened.write(path, os.path.join(arcroot, str(path.relative_to(folder))))
    return archive


def run_build(job: Path, source: dict, **options) -> int:
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({**CONFIG, **options, "source": source}))
    return main(str(job / "config.json"))


def store(job: Path) -> dict[str, bytes]:
    folder = job / "dataset"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name not in ("manifest.json", "skipped.json")}


def manifest(job: Path) -> dict:
    return json.loads((job / "dataset" / "manifest.json").read_text())


def checksums(job: Path) -> dict:
    """The manifest's checksums, but the skipped-file report's (it names files as the source does)."""
    return {name: entry for name, entry in manifest(job)["files"].items() if name != "skipped.json"}


@pytest.mark.parametrize("encoding", ["none", "png"])
def test_an_archive_builds_the_same_store_mean_and_checksums_as_its_folders(tmp_path, encoding):
    folders = photo_folders(tmp_path / "photos")
    assert run_build(tmp_path / "folder", {"type": "folder", "train": str(folders)}, encoding=encoding) == 0
    tar_of(folders, tmp_path / "photos.tar.gz", arcroot="photos")
    zip_of(folders, tmp_path / "photos.zip", arcroot="photos")
    expected = store(tmp_path / "folder")
    assert {"train-images.npy" if encoding == "none" else "train-images.bin", "mean.npy"} <= set(expected)
    for archive in ("photos.tar.gz", "photos.zip"):
        job = tmp_path / f"job-{archive}"
        assert run_build(job, {"type": "archive", "path": str(tmp_path / archive)}, encoding=encoding) == 0
        assert store(job) == expected, archive
        assert checksums(job) == checksums(tmp_path / "folder")
        skipped = json.loads((job / "dataset" / "skipped.json").read_text())
        assert [entry["path"] for entry in skipped] == ["photos/owls/broken.jpg"]
        assert not (job / "dataset" / "archive.tar").exists()


def test_the_images_checksum_is_that_of_the_stored_images(tmp_path):
    folders = photo_folders(tmp_path / "photos", per_class=3)
    tar_of(folders, tmp_path / "photos.tar")
    job = tmp_path / "job"
    assert run_build(job, {"type": "archive", "path": str(tmp_path / "photos.tar")}, val_percent=0, test_percent=0) == 0
    reader = SplitReader(job / "dataset", "train", "none", (16, 24, 3), ClassLabels())
    digests = b"".join(hashlib.sha256(reader.image(i).tobytes()).digest() for i in range(len(reader)))
    assert manifest(job)["files"]["train-images.npy"]["images_sha256"] == hashlib.sha256(digests).hexdigest()
    mean = np.load(job / "dataset" / "mean.npy")
    assert np.allclose(mean, reader.images(np.arange(len(reader))).mean(axis=0, dtype=np.float64), atol=1e-4)


def tar_with(path: Path, *members: tarfile.TarInfo, data: bytes = b"") -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for member in members:
            archive.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    return info


def hostile(tmp_path: Path, kind: str) -> Path:
    if kind == "traversal":
        return tar_with(tmp_path / "evil.tar.gz", member("cats/../../escape.jpg", size=3), data=b"abc")
    if kind == "symlink":
        return tar_with(tmp_path / "evil.tar.gz", member("cats/a.jpg", size=3), member("cats/link.jpg", tarfile.SYMTYPE),
                        data=b"abc")
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as opened:
        opened.writestr("cats/a.jpg", bytes(20 * 1024 * 1024))
    return tmp_path / "bomb.zip"


@pytest.mark.parametrize(("kind", "message"), [("traversal", "would be written outside the destination"),
                                               ("symlink", "is a symbolic link"), ("bomb", "a possible zip bomb")])
def test_a_hostile_archive_is_refused_with_nothing_written(tmp_path, kind, message):
    job = tmp_path / "job"
    assert run_build(job, {"type": "archive", "path": str(hostile(tmp_path, kind))}) == 1
    assert sorted(p.name for p in job.iterdir()) == ["config.json", "events.jsonl"]
    error = [json.loads(line) for line in (job / "events.jsonl").read_text().splitlines()][-1]
    assert error["kind"] == "error" and message in error["data"]["message"]
    assert not (tmp_path / "escape.jpg").exists()


def private_memory(pid: int) -> int:
    """Anonymous and shared-memory resident bytes of a process and its children."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                total += sum(int(line.split()[1]) * 1024 for line in status if line.startswith(("RssAnon:", "RssShmem:")))
            with open(f"/proc/{current}/task/{current}/children") as children:
                pending.extend(int(c) for c in children.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def peak_build_memory(job: Path, archive: Path) -> int:
    job.mkdir()
    (job / "config.json").write_text(json.dumps({**CONFIG, "source": {"type": "archive", "path": str(archive)}}))
    process = subprocess.Popen([sys.executable, "-m", "trainer.dataset_build", "config.json"], cwd=job,
                               env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
                               stdout=subprocess.DEVNULL)
    peak = 0
    while process.poll() is None:
        peak = max(peak, private_memory(process.pid))
        time.sleep(0.02)
    assert process.returncode == 0
    return peak


def test_memory_stays_flat_on_a_large_archive(tmp_path):
    rng = np.random.default_rng(1)
    big = rng.integers(0, 256, (1500, 1500, 3), dtype=np.uint8)
    with tarfile.open(tmp_path / "large.tar.gz", "w:gz", compresslevel=1) as archive:
        for n in range(60):  # 60 noisy photos of about 2.5 MB: 150 MB to read through
            out = io.BytesIO()
            Image.fromarray(np.roll(big, n * 7, axis=1)).save(out, format="JPEG", quality=95)
            info = tarfile.TarInfo(f"c{n % 3}/{n:03d}.jpg")
            info.size = len(out.getvalue())
            archive.addfile(info, io.BytesIO(out.getvalue()))
    tar_of(photo_folders(tmp_path / "small", per_class=2), tmp_path / "small.tar.gz")
    assert (tmp_path / "large.tar.gz").stat().st_size > 120 * 1024 * 1024
    small = peak_build_memory(tmp_path / "small-job", tmp_path / "small.tar.gz")
    large = peak_build_memory(tmp_path / "large-job", tmp_path / "large.tar.gz")
    assert large - small < 60 * 1024 * 1024, (small, large)


def _add_to_row(image: np.ndarray) -> None:
    build_pool._add_to_mean(image)


@pytest.mark.parametrize("images", [1000, 2**32 // 255, 2**32 // 255 + 1])
def test_the_pool_sums_images_exactly_in_rows_wide_enough_for_the_planned_count(images):
    """Sums stay 32-bit while the planned count cannot overflow them (up to 2**32 // 255 images,
    whose sums of 255 fill 32 bits exactly), and 64-bit beyond; either way the pool's processes
    add every image exactly."""
    context = multiprocessing.get_context("fork")
    sums = build_pool.MeanSums(context, 2, (3, 2, 1), images)
    assert sums.rows().dtype == (np.uint32 if images <= 2**32 // 255 else np.int64)
    sums.rows()[0] = np.iinfo(np.uint32).max - 300 if images > 2**32 // 255 else 0
    start = sums.total().copy()
    rng = np.random.default_rng(0)
    batch = rng.integers(0, 256, (40, 3, 2, 1), dtype=np.uint8)
    with context.Pool(2, build_pool.init_worker, ({}, sums)) as pool:
        pool.map(_add_to_row, list(batch), chunksize=1)
    assert np.array_equal(sums.total(), start + batch.sum(axis=0, dtype=np.int64))


@pytest.mark.parametrize("memory, rows", [(3 * 24, 3), (3 * 24 - 1, 2), (23, 1)])
def test_rows_of_sums_are_fewer_than_processes_when_they_would_pass_the_memory_bound(monkeypatch, memory, rows):
    """A row of sums per process while the rows fit in ``MEAN_MEMORY_BYTES`` (256 MiB), fewer beyond,
    and at least one; processes sharing a row add to it under its lock, every image exactly. The
    bound is lowered here to three 24-byte rows (3×2×1 32-bit sums), one byte less, and below one."""
    monkeypatch.setattr(build_pool, "MEAN_MEMORY_BYTES", memory)
    context = multiprocessing.get_context("fork")
    sums = build_pool.MeanSums(context, 3, (3, 2, 1), 1000)
    assert sums.count == rows and sums.rows().shape == (rows, 3, 2, 1)
    batch = np.random.default_rng(1).integers(0, 256, (60, 3, 2, 1), dtype=np.uint8)
    with context.Pool(3, build_pool.init_worker, ({}, sums)) as pool:
        pool.map(_add_to_row, list(batch), chunksize=1)
    assert np.array_equal(sums.total(), batch.sum(axis=0, dtype=np.int64))


@pytest.mark.parametrize("per_class", [10, 11], ids=["32-files-one-batch", "35-files-two-batches"])
def test_every_file_is_stored_once_in_order_on_each_side_of_a_batch(tmp_path, per_class):
    """The pool is sent 32 files at a time (``TASKS_PER_BATCH``): the store
    holds each image once with 32 files and with more (3 classes: 3 ×
    ``per_class`` files and one that is not an image)."""
    assert TASKS_PER_BATCH == 32 and per_class * 3 + 1 - TASKS_PER_BATCH in (-1, 2)
    folders = photo_folders(tmp_path / "photos", per_class=per_class)
    assert run_build(tmp_path / "pool", {"type": "folder", "train": str(folders)}, val_percent=0, test_percent=0) == 0
    reader = SplitReader(tmp_path / "pool" / "dataset", "train", "none", (16, 24, 3), ClassLabels())
    assert np.bincount(reader.targets).tolist() == [per_class] * 3
    stored = [reader.image(i).tobytes() for i in range(len(reader))]
    assert len(set(stored)) == len(stored)
    assert manifest(tmp_path / "pool")["skipped"]["total"] == 1
