"""A trained model as an evaluation needs it, read without torch: its
snapshots, its dataset and classes, and whether it can be used now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.shortcuts import get_object_or_404

from datasets import store
from jobs.models import ACTIVE, Job
from trainer import jobfiles
from training.modeljobs import model_or_none, models

SPLITS = {"val": "validation", "test": "test"}


class Unusable(Exception):
    """A model that cannot be evaluated (now); the message is for the user,
    ``field`` the input it is about."""

    def __init__(self, message: str, field: str = "model") -> None:
        super().__init__(message)
        self.field = field


def model_or_404(model_id: int) -> Job:
    return get_object_or_404(models(), pk=model_id)


def find(model_id: Any) -> Job:
    """The training job ``model_id`` names, or ``Unusable`` saying why not."""
    model = model_or_none(model_id)
    if model is None:
        raise Unusable(f"There is no model #{model_id}.")
    return model


def snapshots(model: Job) -> list[str]:
    """The names of the model's snapshot files: per epoch in order, then the best one."""
    return [Path(file).name for file in jobfiles.snapshots(model.folder)]


def dataset(model: Job) -> Job | None:
    return Job.objects.filter(pk=model.params.get("dataset"), kind="dataset").first()


def classes(model: Job) -> list[str]:
    found = dataset(model)
    manifest = store.manifest(found) if found else None
    if manifest is None:
        raise Unusable("The model's dataset is gone.")
    return list(manifest["classes"])


def split_count(model: Job, split: str) -> int:
    found = dataset(model)
    manifest = store.manifest(found) if found else None
    if manifest is None:
        raise Unusable("The model's dataset is gone.")
    return int(((manifest.get("splits") or {}).get(split) or {}).get("count") or 0)


def check(model: Job, snapshot: str) -> str:
    """Refuse a model that cannot be evaluated, with the reason; else a note
    for the user ("" when there is nothing to say)."""
    if not (model.folder / jobfiles.CONFIG).is_file():
        raise Unusable("The model has not started training yet: it has no snapshot to evaluate.")
    names = snapshots(model)
    if not names:
        raise Unusable("The model has no snapshot yet: evaluate it once it has saved one.")
    if snapshot and snapshot not in names:
        raise Unusable(f"The model has no snapshot {snapshot!r}; it has {', '.join(names)}.", "snapshot")
    if model.status in ACTIVE and not snapshot:
        return "The model is still training: the evaluation uses its newest snapshot."
    return ""


def check_split(model: Job, split: str) -> None:
    if not split_count(model, split):
        raise Unusable(f"The model's dataset has no {SPLITS[split]} images.", "split")
