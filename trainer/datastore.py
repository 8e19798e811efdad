"""The packed image store of a dataset split, written once by the build and
read by the gallery and the trainer without per-image Python work.

Per split, in the dataset folder:

- encoding ``none``: ``<split>-images.npy``, one uint8 array ``N×H×W×C``
  (memory-mapped when read);
- encoding ``png`` or ``jpeg``: ``<split>-images.bin`` (the encoded images one
  after another) and ``<split>-index.npy`` (``N×2`` int64 offset and length);
- always ``<split>-labels.npy`` (``N`` int32 class indices).

The writer streams: memory does not grow with the number of images.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import numpy as np
from PIL import Image

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


class SplitWriter:
    """Appends images of one split; ``close()`` fixes the final count."""

    def __init__(self, folder: Path, split: str, shape: tuple[int, int, int], encoding: str, quality: int,
                 capacity: int) -> None:
        self.folder, self.split, self.shape = folder, split, shape
        self.encoding, self.quality = encoding, quality
        self.count = 0
        self.labels = open(folder / f"{split}-labels.bin", "wb")
        if encoding == "none":
            self.header_length = len(_npy_header((capacity, *shape)))
            self.images = open(folder / f"{split}-images.npy", "wb")
            self.images.write(_npy_header((capacity, *shape)))
        else:
            self.images = open(folder / f"{split}-images.bin", "wb")
            self.index = open(folder / f"{split}-index.bin", "wb")
            self.offset = 0

    def add(self, pixels: np.ndarray, label: int, encoded: bytes | None = None) -> None:
        """Append one image; ``encoded`` is its PNG/JPEG form when already made (in a worker)."""
        if self.encoding == "none":
            self.images.write(np.ascontiguousarray(pixels, dtype=np.uint8).tobytes())
        else:
            data = encoded if encoded is not None else encode(pixels, self.encoding, self.quality)
            self.images.write(data)
            self.index.write(struct.pack("<qq", self.offset, len(data)))
            self.offset += len(data)
        self.labels.write(struct.pack("<i", label))
        self.count += 1

    def close(self) -> None:
        if self.encoding == "none":
            self.images.seek(0)
            self.images.write(_npy_header((self.count, *self.shape), self.header_length))
            self.images.truncate(self.header_length + self.count * int(np.prod(self.shape)))
        else:
            self.index.close()
            _bin_to_npy(self.folder / f"{self.split}-index.bin", np.int64, (self.count, 2))
        self.images.close()
        self.labels.close()
        _bin_to_npy(self.folder / f"{self.split}-labels.bin", np.int32, (self.count,))


def _bin_to_npy(path: Path, dtype: type, shape: tuple[int, ...]) -> None:
    """Turn a raw little-endian file into a .npy next to it (these are small: labels, index)."""
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


class SplitReader:
    """Random access to a split's images (H×W×C uint8) and labels."""

    def __init__(self, folder: Path, split: str, encoding: str, shape: tuple[int, int, int]) -> None:
        self.shape = shape
        self.labels = np.load(folder / f"{split}-labels.npy")
        if encoding == "none":
            self.images = np.load(folder / f"{split}-images.npy", mmap_mode="r") if len(self.labels) else None
            self.index = None
        else:
            self.index = np.load(folder / f"{split}-index.npy")
            self.blob = folder / f"{split}-images.bin"

    def __len__(self) -> int:
        return len(self.labels)

    def image(self, i: int) -> np.ndarray:
        if self.index is None:
            return np.asarray(self.images[i])
        offset, length = (int(v) for v in self.index[i])
        with open(self.blob, "rb") as handle:
            handle.seek(offset)
            data = handle.read(length)
        with Image.open(io.BytesIO(data)) as image:
            pixels = np.asarray(image.convert("L" if self.shape[2] == 1 else "RGB"))
        return pixels.reshape(self.shape)


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
