"""What the dataset build's pool processes do with each image: read it (a
file, or a member of the uploaded archive), decode and resize it, store it,
and add it to the checksums and the mean, so that nothing is read back once
the pool is done.

A raw store's pixels go straight into the image's slot of the file; an
encoded store's bytes go back to the parent, which appends them in order.
Every image's sha256 goes back with its result; training pixels are summed
into rows of shared memory (exact integer sums).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

import numpy as np

from .archives import Entry, MemberReader
from .buildplan import pad_to
from .dataset_sources import inside
from .datastore import encode
from .imageio import ImageError, load_image_sized, resize
from .targets import TargetError

MEAN_MEMORY_BYTES = 256 * 1024**2  # at most this for the rows of sums (at least one row)

# (position in the plan, file path or archive member name, archive member or None, split, slot, planned target)
Task = tuple[int, str, Entry | None, str, int, Any]
# (position in the plan, stored?, encoded bytes or None, sha256 of the stored bytes or None, why not stored,
#  the target placed on the stored image, what placing it counted)
Result = tuple[int, bool, bytes | None, bytes | None, str, Any, dict[str, int]]


class MeanSums:
    """Sums of the training pixels, in rows of shared memory the pool adds to (each process to one
    row, under that row's lock); rows are fewer than processes only for very large images.

    A row is 32-bit while ``images`` of 255 cannot overflow it (up to 16.8 million images),
    64-bit beyond: adding an image into 32-bit sums moves half the memory, which at 256×256 is
    a few percent of the image's whole cost."""

    def __init__(self, context: BaseContext, processes: int, shape: tuple[int, int, int], images: int) -> None:
        self.shape = shape
        wide = images * 255 > np.iinfo(np.uint32).max
        self.dtype, ctype = (np.int64, ctypes.c_int64) if wide else (np.uint32, ctypes.c_uint32)
        row_bytes = int(np.prod(shape)) * ctypes.sizeof(ctype)
        self.count = max(1, min(processes, MEAN_MEMORY_BYTES // row_bytes))
        self.memory = context.RawArray(ctype, self.count * int(np.prod(shape)))
        self.locks = [context.Lock() for _ in range(self.count)]
        self.next_row = context.Value(ctypes.c_int, 0)

    def rows(self) -> np.ndarray:
        return np.frombuffer(self.memory, dtype=self.dtype).reshape(self.count, *self.shape)

    def claim_row(self) -> int:
        with self.next_row.get_lock():
            row = self.next_row.value % self.count
            self.next_row.value += 1
        return row

    def total(self) -> np.ndarray:
        return self.rows().sum(axis=0, dtype=np.int64)


class _Worker:
    """One pool process's settings and open files."""

    options: dict[str, Any] = {}
    stores: dict[str, int] = {}  # split -> file descriptor of its raw store
    mean: MeanSums | None = None
    mean_row: tuple[np.ndarray, Any] | None = None


def init_worker(options: dict[str, Any], mean: MeanSums | None) -> None:
    _Worker.options = options
    if mean is not None:
        row = mean.claim_row()
        _Worker.mean_row = mean.rows()[row], mean.locks[row]


def _source(path: str, member: Entry | None) -> str | bytes:
    """The file's path, or the archive member's bytes (an ArchiveError stops the whole build)."""
    if member is None:
        return path
    reader: MemberReader = _Worker.options["archive"]
    return reader.read(member)


def _store_raw(split: str, slot: int, pixels: np.ndarray) -> None:
    store = _Worker.options["slots"][split]
    if split not in _Worker.stores:
        _Worker.stores[split] = os.open(store["path"], os.O_WRONLY | os.O_CLOEXEC)
    os.pwrite(_Worker.stores[split], pixels, store["offset"] + slot * pixels.nbytes)


def _add_to_mean(pixels: np.ndarray) -> None:
    if _Worker.mean_row is not None:
        row, lock = _Worker.mean_row
        with lock:
            row += pixels


def decode(task: Task) -> Result:
    """Decode, resize and store one image, and place its target on the stored image."""
    index, path, member, split, slot, planned = task
    o = _Worker.options
    if member is None and os.path.islink(path) and not inside(Path(path), o["roots"]):
        return index, False, None, None, "a link to a file outside the folders this server may read", None, {}
    try:
        padded = pad_to(o)  # a padding size is in the source's pixels: no draft decode
        draft = (o["width"], o["height"]) if o["targets"].allows_draft and not padded else None
        image, shown = load_image_sized(_source(path, member), o["channels"], draft=draft, resize_mode=o["resize_mode"])
        target, counted = o["targets"].placed(planned, shown, image.size, o)
        pixels = resize(image, o["width"], o["height"], o["resize_mode"], np.random.default_rng([o["seed"], index]),
                        padded)
    except (ImageError, TargetError) as exc:
        return index, False, None, None, str(exc), None, {}
    if split == "train":
        _add_to_mean(pixels)
    if o["encoding"] == "none":
        pixels = np.ascontiguousarray(pixels)  # written and hashed in place, not copied to bytes
        _store_raw(split, slot, pixels)
        return index, True, None, hashlib.sha256(pixels).digest(), "", target, counted
    encoded = encode(pixels, o["encoding"], o["quality"])
    return index, True, encoded, hashlib.sha256(encoded).digest(), "", target, counted


def decode_batch(tasks: list[Task]) -> list[Result]:
    return [decode(task) for task in tasks]
