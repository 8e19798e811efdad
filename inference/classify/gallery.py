"""The images of a model's dataset that Classify one offers to pick: a few
of each class from the validation split (else the test split, else the
training split), by their dataset image addresses, never by a file path."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.urls import reverse

from datasets import services as dataset_services
from jobs.models import Job

from .. import trained

PER_CLASS = 3
MAX_IMAGES = 24
SCANNED = 20_000  # labels looked at, so that a huge split costs the page nothing
PREFERRED_SPLITS = ("val", "test", "train")


def gallery(model: Job) -> dict[str, Any]:
    """``{"split", "images": [{"index", "label", "url"}]}``; no images when the dataset is gone."""
    dataset = trained.dataset(model)
    manifest = dataset_services.manifest(dataset) if dataset else None
    counts = {s: int(((manifest or {}).get("splits") or {}).get(s, {}).get("count") or 0) for s in dataset_services.SPLITS}
    split = next((s for s in PREFERRED_SPLITS if counts[s]), None)
    if split is None:
        return {"split": None, "images": []}
    labels = dataset_services.reader(dataset, split, manifest).targets  # classify's models are of a task of class labels
    return {"split": split, "images": [
        {"index": i, "label": manifest["classes"][int(labels[i])], "url": reverse("dataset-image", args=[dataset.pk, split, i])}
        for i in _some_of_each_class(labels)]}


def _some_of_each_class(labels: np.ndarray) -> list[int]:
    """Up to ``PER_CLASS`` positions of each class, ``MAX_IMAGES`` in all, from the first ``SCANNED`` labels."""
    taken: dict[int, int] = {}
    chosen = []
    for position, label in enumerate(labels[:SCANNED].tolist()):
        if taken.get(label, 0) < PER_CLASS:
            taken[label] = taken.get(label, 0) + 1
            chosen.append(position)
            if len(chosen) == MAX_IMAGES:
                break
    return chosen
