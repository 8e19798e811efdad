"""Classifying images with a ``Loaded`` model, in batches: one image, a
list of files (classify many), or a split of the model's dataset (evaluate,
read exactly as the training loop reads it)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from trainer.data import Batches, load_split, load_store
from trainer.datastore import SplitReader

from .errors import InferenceError
from .model import Loaded
from .preprocess import Source, decode, normalize

TOP = 5
SPLIT_BUDGET = 2**30  # bytes of a split's pixels held at once; larger splits are streamed

Label = int | str | None
Progress = Callable[[int, int], None]


@torch.inference_mode()
def logits(loaded: Loaded, x: torch.Tensor) -> torch.Tensor:
    """The network's class scores (float32 N×classes, on the CPU) for the inputs ``x``."""
    return loaded.model(x.to(loaded.device)).float().cpu()


def best_scores(scores: torch.Tensor) -> torch.return_types.topk:
    """Per row of ``scores``: the top five classes' probabilities and indices, best first."""
    probabilities = scores.softmax(dim=1)
    return probabilities.topk(min(TOP, probabilities.shape[1]), dim=1)


def named(loaded: Loaded, indices: torch.Tensor, probabilities: torch.Tensor) -> list[list[dict[str, Any]]]:
    """``best_scores``' rows as ``{"index", "class", "probability"}``."""
    return [[{"index": i, "class": loaded.classes[i], "probability": p}
             for i, p in zip(row_indices, row_values, strict=True)]
            for row_indices, row_values in zip(indices.tolist(), probabilities.tolist(), strict=True)]


def top_classes(loaded: Loaded, scores: torch.Tensor) -> list[list[dict[str, Any]]]:
    """Per row of ``scores``: the top five classes, ``{"index", "class", "probability"}``, best first."""
    best = best_scores(scores)
    return named(loaded, best.indices, best.values)


def classify(loaded: Loaded, images: Sequence[Source], batch_size: int = 64) -> list[list[dict[str, Any]]]:
    """The top five of each image (a path or the file's bytes); a bad image raises ``InferenceError``."""
    results = []
    for start in range(0, len(images), batch_size):
        pixels = torch.stack([torch.from_numpy(decode(loaded, image)) for image in images[start:start + batch_size]])
        results += top_classes(loaded, logits(loaded, normalize(loaded, pixels)))
    return results


def label_index(loaded: Loaded, label: Label) -> int | None:
    """A label given as a class index or a class name, as an index (None when absent)."""
    if label is None or label == "":
        return None
    if isinstance(label, int) or (isinstance(label, str) and label.isdigit() and label not in loaded.classes):
        index = int(label)
        if not 0 <= index < len(loaded.classes):
            raise InferenceError(f"The label {index} is not a class of this model (0 to {len(loaded.classes) - 1}).")
        return index
    if label not in loaded.classes:
        raise InferenceError(f"{label!r} is not a class of this model.")
    return loaded.classes.index(label)


def _name(source: Source) -> str:
    return "(uploaded image)" if isinstance(source, bytes | bytearray) else os.fspath(source)


def evaluate(loaded: Loaded, items: Iterable[tuple[Source, Label]], batch_size: int = 64,
             progress: Progress | None = None) -> list[dict[str, Any]]:
    """Classify many: per item ``{"image", "label", "top", "error"}`` in the
    items' order. An image that cannot be used gets its ``error`` (and no
    ``top``) and the others go on; ``progress(done, total)`` follows along."""
    items = list(items)
    results: list[dict[str, Any]] = []
    for start in range(0, len(items), batch_size):
        chunk = items[start:start + batch_size]
        pixels, places = [], []
        for source, label in chunk:
            row = {"image": _name(source), "label": None, "top": None, "error": None}
            try:
                row["label"] = label_index(loaded, label)
                pixels.append(torch.from_numpy(decode(loaded, source)))
                places.append(row)
            except InferenceError as exc:
                row["error"] = str(exc)
            results.append(row)
        if pixels:
            for row, top in zip(places, top_classes(loaded, logits(loaded, normalize(loaded, torch.stack(pixels)))),
                                strict=True):
                row["top"] = top
        if progress:
            progress(len(results), len(items))
    return results


def evaluate_split(loaded: Loaded, dataset_dir: Path | str, split: str, batch_size: int = 256,
                   progress: Progress | None = None) -> list[dict[str, Any]]:
    """Evaluate on a split of the model's dataset (``val`` or ``test``): its
    stored images, centre-cropped and mean-subtracted by the training loader.
    Rows as ``evaluate`` gives them, ``image`` being the position in the split.

    The loop keeps each batch's labels and top five as tensors and makes the
    rows' Python objects once, after it: made per batch, they cost 15% of
    LeNet's throughput on the CPU (``bench/classify_latency.py``)."""
    batches, total = split_batches(loaded, dataset_dir, split, batch_size)
    labels, indices, probabilities, done = [], [], [], 0
    for x, y in batches:
        best = best_scores(logits(loaded, x))
        labels.append(y)
        indices.append(best.indices)
        probabilities.append(best.values)
        done += len(y)
        if progress:
            progress(done, total)
    if not labels:
        return []
    tops = named(loaded, torch.cat(indices), torch.cat(probabilities))
    return [{"image": image, "label": label, "top": top, "error": None}
            for image, (label, top) in enumerate(zip(torch.cat(labels).tolist(), tops, strict=True))]


def split_batches(loaded: Loaded, dataset_dir: Path | str, split: str, batch_size: int = 256) -> tuple[Batches, int]:
    """A split of the model's dataset as the training loader gives it (in
    order, on the model's device, normalised as the run was), and its size."""
    data = load_split(dataset_dir, split, SPLIT_BUDGET)
    if data is None:
        raise InferenceError(f"The dataset has no {split} images.")
    return Batches(data, batch_size, shuffle=False, device=loaded.device, normalizer=loaded.normalizer), len(data)


def store_batches(loaded: Loaded, store: SplitReader, batch_size: int = 256) -> tuple[Batches, int]:
    """``split_batches`` of a store the evaluation wrote itself (new images
    prepared as the model's dataset build prepared its own), so that they
    are batched and normalised exactly as a split of the dataset is."""
    data = load_store(store, SPLIT_BUDGET)
    if data is None:
        raise InferenceError("None of the images could be used.")
    return Batches(data, batch_size, shuffle=False, device=loaded.device, normalizer=loaded.normalizer), len(data)
