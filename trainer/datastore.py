"""The packed image store of a dataset split, written once by the build and
read by the gallery and the trainer without per-image Python work.

Per split, in the dataset folder:

- encoding ``none``: ``<split>-images.npy``, one uint8 array ``N×H×W×C``
  (memory-mapped when read);
- encoding ``png`` or ``jpeg``: ``<split>-images.bin`` (the encoded images one
  after another) and ``<split>-index.npy`` (``N×2`` int64 offset and length);
- always the split's targets, in the format of the dataset's task
  (``trainer.targets``; classification: ``<split>-labels.npy``, ``N`` int32
  class indices; detection: ``<split>-boxes.npy``, ``N×K×6`` float32 boxes,
  ``trainer.detection.targets``).

The writer streams pixels: memory grows with the number of images by their
targets alone.

The manifest checksums an images file by its images (``images_sha256``):
the sha256 of the concatenated sha256 digests of each image's stored bytes
(its raw pixels, or its PNG/JPEG bytes), in store order. The build's pool
computes each digest as it stores the image, so nothing is read back.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import numpy as np
from PIL import Image

from .targets import TargetFormat

NPY_MAGIC = b"\x93NUMPY\x01\x00"
HEADER_ALIGN = 64


def _npy_header(shape: tuple[int, ...], length: int | None = None) -> bytes:
    """A version 1.0 .npy header for a C-ordered uint8 array, padded to
    ``length`` bytes when given (so it can be rewritten in place)."""
    text = f"{{'descr': '|u1', 'fortran_order': False, 'shape': {shape!r}, }}"
    total = length or -(-(len(NPY_MAGIC) + 2 + len(text) + 1) // HEADER_ALIGN) * HEADER_ALIGN
    padding = total - len(NPY_MAGIC) - 2 - len(text) - 1
    if padding < 0:
        raise ValueError("the new header does not fit in the space of the old one")
    return NPY_MAGIC + struct.pack("<H", total - len(NPY_MAGIC) - 2) + (text + " " * padding + "\n").encode("latin1")


class RawSplitWriter:
    """A split stored as raw pixels: one ``N×H×W×C`` uint8 .npy. The file is
    sized for every planned image and the pool's processes write each image
    into its own slot (no pixels through pipes); ``close()`` closes the gaps
    left by skipped files and fixes the count."""

    def __init__(self, folder: Path, split: str, shape: tuple[int, int, int], capacity: int,
                 targets: TargetFormat) -> None:
        self.folder, self.split, self.shape, self.capacity = folder, split, shape, capacity
        self.path = folder / images_file(split, "none")
        header = _npy_header((capacity, *shape))
        self.header_length = len(header)
        self.image_bytes = int(np.prod(shape))
        with open(self.path, "wb") as handle:
            handle.write(header)
            handle.flush()
            # Allocated, not a sparse file: a disk without room for every image
            # says so here (ENOSPC) instead of killing the pool's processes
            # with SIGBUS when they write into the mapped slots.
            os.posix_fallocate(handle.fileno(), 0, self.header_length + capacity * self.image_bytes)
        self.valid = np.zeros(capacity, dtype=bool)
        self.targets = targets.writer(folder, split, capacity)

    @property
    def count(self) -> int:
        return int(self.valid.sum())

    def slots(self) -> dict:
        """What a writing process needs to open the slots (see ``open_slots``)."""
        return {"path": str(self.path), "offset": self.header_length, "capacity": self.capacity, "shape": self.shape}

    def mark(self, slot: int, target: object) -> None:
        """The image of ``slot`` has been written; ``target``: its task's target."""
        self.valid[slot] = True
        self.targets.put(slot, target)

    def close(self) -> None:
        count = self.count
        if count < self.capacity and count:
            images = open_slots(self.slots())
            kept = np.flatnonzero(self.valid)
            first_gap = int(np.argmin(self.valid))
            for target, slot in enumerate(kept[first_gap:], start=first_gap):
                images[target] = images[slot]
            images.flush()
            del images
        with open(self.path, "r+b") as handle:
            handle.write(_npy_header((count, *self.shape), self.header_length))
            handle.truncate(self.header_length + count * self.image_bytes)
        self.targets.save(self.folder, self.split, np.flatnonzero(self.valid))


def open_slots(slots: dict) -> np.memmap:
    return np.memmap(slots["path"], dtype=np.uint8, mode="r+", offset=slots["offset"],
                     shape=(slots["capacity"], *slots["shape"]))


class EncodedSplitWriter:
    """A split stored as PNG or JPEG images one after another, with an index."""

    def __init__(self, folder: Path, split: str, shape: tuple[int, int, int], capacity: int,
                 targets: TargetFormat, encoding: str, quality: int) -> None:
        self.folder, self.split, self.shape = folder, split, shape
        self.encoding, self.quality = encoding, quality
        self.count = 0
        self.offset = 0
        self.targets = targets.writer(folder, split, capacity)
        self.images = open(folder / images_file(split, encoding), "wb")
        self.index = open(folder / f"{split}-index.bin", "wb")

    def add(self, encoded: bytes, target: object) -> None:
        """The next image, encoded; ``target``: its task's target."""
        self.images.write(encoded)
        self.index.write(struct.pack("<qq", self.offset, len(encoded)))
        self.offset += len(encoded)
        self.targets.put(self.count, target)
        self.count += 1

    def close(self) -> None:
        for handle in (self.images, self.index):
            handle.close()
        _bin_to_npy(self.folder / f"{self.split}-index.bin", np.int64, (self.count, 2))
        self.targets.save(self.folder, self.split, np.arange(self.count))


def _bin_to_npy(path: Path, dtype: type, shape: tuple[int, ...]) -> None:
    """Turn a raw little-endian file into a .npy next to it (this is small: the index)."""
    array = np.fromfile(path, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)
    np.save(path.with_suffix(".npy"), array.astype(dtype))
    path.unlink()


def encode(pixels: np.ndarray, encoding: str, quality: int) -> bytes:
    image = Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels)
    out = io.BytesIO()
    if encoding == "png":
        image.save(out, format="PNG", compress_level=1)
    else:
        image.save(out, format="JPEG", quality=quality)
    return out.getvalue()


def images_file(split: str, encoding: str) -> str:
    return f"{split}-images.npy" if encoding == "none" else f"{split}-images.bin"


def index_file(split: str) -> str:
    return f"{split}-index.npy"


class SplitReader:
    """Random access to a split's images (H×W×C uint8) and targets: one image
    (the gallery) or a batch of positions (the trainer's streamed splits).
    A raw store is memory-mapped lazily, in the process that reads, so a
    reader can be sent to ``DataLoader`` worker processes."""

    def __init__(self, folder: Path, split: str, encoding: str, shape: tuple[int, int, int],
                 targets: TargetFormat) -> None:
        self.folder, self.split, self.encoding, self.shape = folder, split, encoding, shape
        self.path = folder / images_file(split, encoding)
        self.targets = targets.read(folder, split)
        self.index = None if encoding == "none" else np.load(folder / index_file(split))
        self._raw: np.ndarray | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_raw": None}

    def __len__(self) -> int:
        return len(self.targets)

    def image(self, i: int) -> np.ndarray:
        return self.images(np.array([i]))[0]

    def images(self, positions: np.ndarray) -> np.ndarray:
        """The images at ``positions`` (uint8 N×H×W×C)."""
        if self.index is None:
            if self._raw is None:
                self._raw = np.load(self.path, mmap_mode="r")
            return np.asarray(self._raw[positions])
        pixels = np.empty((len(positions), *self.shape), dtype=np.uint8)
        with open(self.path, "rb") as handle:
            for slot, (offset, length) in enumerate(self.index[positions]):
                pixels[slot] = decode(os.pread(handle.fileno(), int(length), int(offset)), self.shape)
        return pixels


def decode(data: bytes | memoryview, shape: tuple[int, ...]) -> np.ndarray:
    """An encoded image of the store as uint8 pixels of ``shape`` (H×W×C)."""
    mode = "L" if shape[2] == 1 else "RGB"
    with Image.open(io.BytesIO(data)) as image:
        pixels = np.asarray(image if image.mode == mode else image.convert(mode))
    return pixels.reshape(shape)


def png_bytes(pixels: np.ndarray) -> bytes:
    """An image of the store as PNG, for the browser."""
    return encode(pixels, "png", 0)


def folder_size(folder: Path) -> int:
    return sum(entry.stat().st_size for entry in folder.rglob("*") if entry.is_file()) if folder.exists() else 0


def replace_folder(source: Path, target: Path) -> None:
    """Move the finished build into place."""
    for entry in source.iterdir():
        os.replace(entry, target / entry.name)
    source.rmdir()
