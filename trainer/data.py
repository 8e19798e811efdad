"""The training loop's data: a dataset split loaded whole (into host memory,
then usually onto the device, as uint8) or streamed, and ``Batches``, the
per-epoch loader yielding normalised, augmented batches on the device.

A split that fits the budget is read once (raw stores in one read, encoded
ones decoded by a process pool into one shared array); each batch is then a
gather on the device, with augmentation as batched tensor operations
(``trainer.augment``) and no per-image Python work nor host-device
synchronisation. A split that does not fit is a ``StreamingSplit``: its
batches are decoded ahead in ``DataLoader`` processes.

Over 400 lines on purpose: splits, normalisation and ``Batches`` share one
memory layout and device contract; reading the store is ``datastore``'s, the
step arithmetic ``steps``' and augmentation ``augment``'s.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from . import jobfiles, steps
from .augment import Augment, Moved, Positions, centre_crop, resample, take
from .children import fork_pool, signals_held, start_child
from .datastore import SplitReader, decode
from .tasks import Task, task_of

MEAN_MODES = ("none", "image", "pixel")
STREAMING_WORKERS = 4
CHUNK_IMAGES = 512  # images a decoding process takes at a time
READ_BYTES = 1 << 28  # one read() of a raw store at most (Linux caps a read near 2 GiB)
SEED_STRIDE = 100003  # epoch permutations are seeded with seed * SEED_STRIDE + epoch
# A batch's targets moved as its pixels were (see ``Batches``).
Follow = Callable[[Tensor, Moved], Tensor]
# A long phase that reports nothing otherwise (decoding a split, validating)
# says how far it is this often, so that the worker does not take the job
# for stuck (``jobs.watchdog``: never before 5 minutes of silence).
STILL_WORKING_SECONDS = 30.0


@dataclass(frozen=True)
class DatasetInfo:
    """What a training job needs to know of a dataset (from its manifest)."""

    path: Path
    task: Task
    classes: list[str]
    image_shape: tuple[int, int, int]  # H, W, C
    encoding: str  # none | png | jpeg
    counts: dict[str, int]  # images per split
    mean: np.ndarray | None  # float H×W×C in pixel units (0..255), when the build made one

    @classmethod
    def load(cls, dataset_dir: Path | str) -> DatasetInfo:
        path = Path(dataset_dir)
        manifest = json.loads((path / jobfiles.MANIFEST).read_text(encoding="utf-8"))
        mean_file = path / "mean.npy"
        return cls(
            path=path,
            task=task_of(manifest),
            classes=list(manifest["classes"]),
            image_shape=tuple(manifest["image_shape"]),
            encoding=manifest["encoding"],
            counts={split: entry["count"] for split, entry in manifest["splits"].items()},
            mean=np.load(mean_file).astype(np.float32) if mean_file.exists() else None,
        )

    @property
    def height(self) -> int:
        return self.image_shape[0]

    @property
    def width(self) -> int:
        return self.image_shape[1]

    @property
    def channels(self) -> int:
        return self.image_shape[2]


# ---- Splits ------------------------------------------------------------------------------------


@dataclass
class SplitData:
    """A whole split: ``images`` uint8 N×H×W×C (contiguous), ``targets`` N×…
    (its task's, e.g. int64 class indices)."""

    images: Tensor
    targets: Tensor

    def __len__(self) -> int:
        return len(self.targets)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.images.shape[1:])

    @property
    def device(self) -> torch.device:
        return self.images.device

    def head(self, count: int) -> Tensor:
        """The first ``count`` images (uint8), e.g. for a network's data-dependent initialisation."""
        return self.images[:count]

    def to(self, device: torch.device | str) -> SplitData:
        """The split on ``device``; the images stay uint8 there (a quarter of
        float32's memory), converted to float one batch at a time."""
        return SplitData(self.images.to(device), self.targets.to(device))


class StreamingSplit:
    """A split too large for the budget: ``Batches`` has its batches decoded
    in ``DataLoader`` worker processes instead of gathered from memory."""

    def __init__(self, reader: BatchReader, workers: int) -> None:
        self.reader = reader
        self.workers = workers

    def __len__(self) -> int:
        return len(self.reader.targets)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return self.reader.shape

    def head(self, count: int) -> Tensor:
        """The first ``count`` images (uint8 N×H×W×C, on the host)."""
        return self.reader[torch.arange(min(count, len(self)))][0]

    def to(self, device: torch.device | str) -> StreamingSplit:
        """Itself: streamed batches are moved to the device one by one."""
        return self


def _start_loader_worker(worker: int) -> None:
    start_child()


class BatchReader(Dataset):
    """The ``DataLoader`` dataset of a streamed split: its items are whole
    batches, the images at a batch of positions (read by the store's
    ``SplitReader``)."""

    def __init__(self, store: SplitReader) -> None:
        self.store = store
        self.shape = store.shape
        self.targets = _as_batched(store.targets)

    def __getitem__(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        chosen = positions.numpy()
        return torch.from_numpy(self.store.images(chosen)), torch.from_numpy(self.targets[chosen])


def _as_batched(targets: np.ndarray) -> np.ndarray:
    """A split's targets as batches give them: class indices as int64, which
    the losses take; anything else as stored."""
    return targets.astype(np.int64) if np.issubdtype(targets.dtype, np.integer) and targets.ndim == 1 else targets


def load_split(dataset_dir: Path | str, split: str, budget_bytes: int,
               processes: int | None = None) -> SplitData | StreamingSplit | None:
    """A split of the dataset, whole in host memory when its pixels fit in
    ``budget_bytes``, else streamed; None when the split has no images.
    Encoded images are decoded by ``processes`` processes (default: one per
    core this process may use)."""
    info = DatasetInfo.load(dataset_dir)
    return load_store(SplitReader(info.path, split, info.encoding, info.image_shape, info.task.targets), budget_bytes,
                      processes)


def load_store(store: SplitReader, budget_bytes: int, processes: int | None = None) -> SplitData | StreamingSplit | None:
    """``load_split`` of any store's split, a dataset's or one an evaluation
    wrote of new images (``trainer.inference.job``)."""
    reader = BatchReader(store)
    count = len(reader.targets)
    if not count:
        return None
    if count * math.prod(store.shape) > budget_bytes:
        return StreamingSplit(reader, min(STREAMING_WORKERS, _cpus()))
    if store.index is None:
        images = _read_raw(store.path)
    else:
        images = _decode_all(store.path, store.index, store.shape, processes or _cpus())
    # A memory-mapped store (a segmentation split's masks) is read into memory with its images.
    targets = reader.targets if reader.targets.flags.writeable else np.array(reader.targets)
    return SplitData(torch.from_numpy(images), torch.from_numpy(targets))


def _cpus() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _read_raw(path: Path) -> np.ndarray:
    """A raw store in large sequential reads (no page-by-page faults of a memory map)."""
    header = np.load(path, mmap_mode="r")
    images = np.empty(header.shape, dtype=np.uint8)
    target = memoryview(images.reshape(-1))
    with open(path, "rb", buffering=0) as handle:
        handle.seek(header.offset)
        done = 0
        while done < len(target):
            read = handle.readinto(target[done:done + READ_BYTES])
            if not read:
                raise OSError(f"{path} ends before its {len(target)} bytes of pixels")
            done += read
    return images


def _decode_all(blob: Path, index: np.ndarray, shape: tuple[int, int, int], processes: int) -> np.ndarray:
    """Every image of an encoded store, decoded by forked processes straight
    into one shared array (no pixels through pipes)."""
    count = len(index)
    shared = mmap.mmap(-1, count * math.prod(shape))
    images = np.frombuffer(shared, dtype=np.uint8).reshape(count, *shape)
    chunks = [(start, min(start + CHUNK_IMAGES, count)) for start in range(0, count, CHUNK_IMAGES)]
    processes = min(processes, len(chunks))
    if processes <= 1:
        _start_decoder(blob, index, images)
        try:
            for chunk in chunks:
                _decode_chunk(chunk)
        finally:
            _decoder.clear()
    else:
        with fork_pool(processes, _start_decoder, (blob, index, images)) as pool:
            said = time.perf_counter()
            for done, _ in enumerate(pool.map(_decode_chunk, chunks), 1):
                if time.perf_counter() - said >= STILL_WORKING_SECONDS:
                    print(f"decoding: {min(done * CHUNK_IMAGES, count)} of {count} images", flush=True)
                    said = time.perf_counter()
    return images


_decoder: dict[str, Any] = {}


def _start_decoder(blob: Path, index: np.ndarray, images: np.ndarray) -> None:
    _decoder.update(blob=blob, index=index, images=images)


def _decode_chunk(chunk: tuple[int, int]) -> None:
    """Decode the images ``start:stop`` (one read of their bytes) into the shared array."""
    start, stop = chunk
    index, images = _decoder["index"], _decoder["images"]
    offsets, lengths = index[start:stop, 0], index[start:stop, 1]
    first = int(offsets.min())
    with open(_decoder["blob"], "rb") as handle:
        data = memoryview(os.pread(handle.fileno(), int((offsets + lengths).max()) - first, first))
    for slot, offset, length in zip(range(start, stop), offsets - first, lengths, strict=True):
        images[slot] = decode(data[offset:offset + length], images.shape[1:])


# ---- Normalisation ---------------------------------------------------------------------------------


class Normalizer:
    """Network input from uint8 pixels: ``pixels/255 - mean/255`` as float32
    N×C×H×W, the mean being the dataset's mean image (``image``), its
    per-channel mean (``pixel``) or nothing (``none``). The mean is
    subtracted from the full-size image, before any crop; ``crop`` is the
    centre crop of the images no augmentation places (evaluation)."""

    def __init__(self, mean_mode: str, mean_image: np.ndarray | None, crop: int | None = None, *,
                 device: torch.device | str = "cpu") -> None:
        if mean_mode not in MEAN_MODES:
            raise ValueError(f"mean must be one of {', '.join(MEAN_MODES)}, not {mean_mode!r}")
        if mean_mode != "none" and mean_image is None:
            raise ValueError("The dataset has no mean image: choose no mean subtraction.")
        self.mean_mode, self.mean_image, self.crop = mean_mode, mean_image, crop or None
        self.device = torch.device(device)
        self.mean: Tensor | None = None  # image: H×W×C; pixel: C; in [0, 1] units
        if mean_image is not None and mean_mode != "none":
            mean = torch.as_tensor(np.asarray(mean_image, dtype=np.float32) / 255, device=self.device)
            self.mean = mean if mean_mode == "image" else mean.mean(dim=(0, 1))

    def to(self, device: torch.device | str) -> Normalizer:
        if torch.device(device) == self.device:
            return self
        return Normalizer(self.mean_mode, self.mean_image, self.crop, device=device)

    def positions(self, height: int, width: int) -> Positions | None:
        """The centre crop's rows and columns (see ``Augment.positions``)."""
        return centre_crop(height, width, self.crop, self.device)

    def subtract(self, x: Tensor, positions: Positions | None = None) -> Tensor:
        """``x`` (float N×C×h×w in [0, 1]) minus the mean, taken at
        ``positions`` of the full image (see ``Augment.positions``)."""
        if self.mean is None:
            return x
        if self.mean.dim() == 1:
            return x - self.mean[:, None, None]
        mean = self.mean[None] if positions is None else take(self.mean[None], None, positions)
        return x - mean.permute(0, 3, 1, 2)

    def __call__(self, pixels: Tensor) -> Tensor:
        """Whole images: uint8 N×H×W×C to normalised, centre-cropped float32
        N×C×h×w (contiguous), on the pixels' device."""
        here = self.to(pixels.device)
        positions = here.positions(*pixels.shape[1:3])
        return here.subtract(unit(take(pixels, None, positions)), positions).contiguous()


def unit(pixels: Tensor) -> Tensor:
    """uint8 N×H×W×C to float32 N×C×H×W in [0, 1], laid out in memory as NHWC (channels_last)."""
    return pixels.permute(0, 3, 1, 2).float().div_(255)


# ---- Batches ---------------------------------------------------------------------------------------


class _EpochSampler:
    """The ``DataLoader`` sampler of a streamed split: this epoch's batches of positions."""

    def __init__(self) -> None:
        self.batches: list[Tensor] = []

    def __iter__(self) -> Iterator[Tensor]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


class Batches:
    """One epoch of (x, y) batches on ``device`` per iteration.

    The order is a permutation from a ``torch.Generator`` seeded with
    ``seed * 100003 + epoch`` (or the stored order without ``shuffle``),
    sharded by rank (positions ``rank::world_size``). Shuffled (training),
    the tail is cut to a multiple of ``world_size`` so that every rank has as
    many samples and batches (DDP steps together); in order (evaluation),
    every sample comes once over all the ranks, whose shares (``samples``)
    may differ by one: sum the results over ranks after the loop.
    ``drop_last`` drops a last, incomplete batch.

    The images are placed (cropped, translated, flipped) by ``augment`` when
    given, else centre-cropped to the normaliser's ``crop``.

    ``follow(targets, moved)``, when given, moves each batch's targets as
    its pixels moved (``augment.Moved``: re-indexed at ``Augment.positions``,
    then resampled on ``Augment.spatial_grid``): a task whose targets are
    places in the image (detection's boxes, segmentation's masks) gives one.

    ``state()`` is the position within the epoch (batches already yielded);
    ``set_epoch(epoch)`` then ``start_at(index)`` resumes there.
    ``data_wait_seconds`` adds up the host time spent producing batches
    (waiting for decoded ones when streaming; launching the gather and the
    augmentation otherwise).
    """

    def __init__(self, split: SplitData | StreamingSplit, batch_size: int, *, shuffle: bool, seed: int = 0,
                 rank: int = 0, world_size: int = 1, device: torch.device | str = "cpu", normalizer: Normalizer,
                 augment: Augment | None = None, drop_last: bool = False, channels_last: bool = False,
                 follow: Follow | None = None) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in a world of {world_size}")
        self.split = split
        self.shuffle, self.seed, self.rank, self.world_size = shuffle, seed, rank, world_size
        self.drop_last, self.channels_last = drop_last, channels_last
        self.device = _full_device(device)
        self.normalizer = normalizer.to(self.device)
        if augment is not None and _full_device(augment.device) != self.device:
            raise ValueError(f"the augmentation draws on {augment.device}, the batches are for {self.device}")
        self.augment = augment
        self.follow = follow
        self.batch_size = 0
        self.set_batch_size(batch_size)
        self.epoch = 0
        self.index = 0
        self._resume = 0
        self.data_wait_seconds = 0.0
        self._sampler = _EpochSampler()
        self._loader: DataLoader | None = None

    def set_batch_size(self, batch_size: int) -> None:
        """The batch size from the next iteration on (between epochs)."""
        if batch_size < 1:
            raise ValueError(f"the batch size must be positive, not {batch_size}")
        self.batch_size = batch_size

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.index, self._resume = epoch, 0, 0

    def start_at(self, index: int) -> None:
        """The next iteration skips the first ``index`` batches of the epoch:
        it yields exactly what the uninterrupted epoch would still have."""
        self.index, self._resume = index, index

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    @property
    def samples(self) -> int:
        """Samples this rank yields in an epoch."""
        per_rank = self._per_rank()
        return per_rank // self.batch_size * self.batch_size if self.drop_last else per_rank

    def __len__(self) -> int:
        return steps.batch_count(self._per_rank(), self.batch_size, self.drop_last)

    def _per_rank(self) -> int:
        return steps.shard_size(len(self.split), self.rank, self.world_size, even=self.shuffle)

    def order(self) -> Tensor:
        """This rank's positions for the current epoch, in order (CPU int64)."""
        total = len(self.split)
        if self.shuffle:
            generator = torch.Generator().manual_seed((self.seed * SEED_STRIDE + self.epoch) % 2**63)
            order = torch.randperm(total, generator=generator)[:total - total % self.world_size]
        else:
            order = torch.arange(total)
        return order[self.rank::self.world_size][:self.samples]

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor]]:
        begin, self._resume = self._resume, 0
        self.index = begin
        if isinstance(self.split, StreamingSplit):
            return self._streamed(begin)
        return self._gathered(begin)

    def _gathered(self, begin: int) -> Iterator[tuple[Tensor, Tensor]]:
        split, size = self.split, self.batch_size
        on_device = split.device == self.device
        order = self.order()
        numbers = order.to(self.device)  # the images' numbers in the split, for the augmentation
        order = order.to(split.device)
        for number in range(begin, len(self)):
            started = time.perf_counter()
            chosen = order[number * size:(number + 1) * size]
            numbered = numbers[number * size:(number + 1) * size]
            if on_device:
                x, moved = self._prepare(split.images, chosen, numbered)
                y = split.targets.index_select(0, chosen)
            else:
                pixels = take(split.images, chosen, None).to(self.device, non_blocking=True)
                x, moved = self._prepare(pixels, None, numbered)
                y = split.targets.index_select(0, chosen).to(self.device, non_blocking=True)
            if self.follow is not None:
                y = self.follow(y, moved)
            self.data_wait_seconds += time.perf_counter() - started
            self.index = number + 1
            yield x, y

    def _streamed(self, begin: int) -> Iterator[tuple[Tensor, Tensor]]:
        size = self.batch_size
        order = self.order()
        numbers = order.to(self.device)
        self._sampler.batches = [order[number * size:(number + 1) * size] for number in range(begin, len(self))]
        if self._loader is None:
            self._loader = DataLoader(self.split.reader, batch_size=None, sampler=self._sampler,
                                      num_workers=self.split.workers, persistent_workers=self.split.workers > 0,
                                      pin_memory=self.device.type == "cuda", worker_init_fn=_start_loader_worker)
        with signals_held():  # the loader's processes are forked here (once: they persist)
            batches = iter(self._loader)
        for number in range(begin, len(self)):
            started = time.perf_counter()
            pixels, targets = next(batches)
            pixels = pixels.to(self.device, non_blocking=True)
            x, moved = self._prepare(pixels, None, numbers[number * size:(number + 1) * size])
            y = targets.to(self.device, non_blocking=True)
            if self.follow is not None:
                y = self.follow(y, moved)
            self.data_wait_seconds += time.perf_counter() - started
            self.index = number + 1
            yield x, y

    def _prepare(self, images: Tensor, chosen: Tensor | None, numbers: Tensor) -> tuple[Tensor, Moved]:
        """The network input of ``images[chosen]`` (uint8 N×H×W×C on the device;
        all of them when ``chosen`` is None), whose numbers in the split are
        ``numbers``: one gather at the crop's positions, then colour changes,
        the mean, rotation/scale and the memory layout; and how its pixels moved."""
        count, height, width, _ = images.shape
        count = count if chosen is None else len(chosen)
        positions = (self.augment.positions(count, height, width, numbers, self.epoch) if self.augment
                     else self.normalizer.positions(height, width))
        x = unit(take(images, chosen, positions))
        if self.augment:
            x = self.augment.photometric(x)
        x = self.normalizer.subtract(x, positions)
        grid = self.augment.spatial_grid(len(x), x.shape[2], x.shape[3], x.dtype) if self.augment else None
        if grid is not None:
            x = resample(x, grid)
        layout = torch.channels_last if self.channels_last else torch.contiguous_format
        return x.contiguous(memory_format=layout), Moved(positions, grid)


def _full_device(device: torch.device | str) -> torch.device:
    """``device`` with its index (``cuda`` is the current CUDA device), so devices compare equal."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device
