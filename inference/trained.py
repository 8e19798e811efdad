"""A trained model as the inference features read it, without torch: the
model a request names, its snapshots, its dataset and classes, and
``Unusable``, the refusal each feature turns into its message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.http import Http404

from datasets import services as dataset_services
from jobs.models import Job
from trainer import jobfiles
from training.modeljobs import model_or_none


class Unusable(Exception):
    """A model that cannot be used for what was asked (now); the message is
    for the user, ``field`` the input it is about."""

    def __init__(self, message: str, field: str = "model") -> None:
        super().__init__(message)
        self.field = field


def model_or_404(model_id: int) -> Job:
    model = model_or_none(model_id)
    if model is None:
        raise Http404(f"There is no model #{model_id}.")
    return model


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
    """The model's dataset, only its id loaded: what its files are found by
    (the rest of a job's row, JSON and dates to decode, took most of the
    query's time)."""
    return Job.objects.filter(pk=model.params.get("dataset"), kind="dataset").only("pk").first()


def manifest(model: Job) -> dict[str, Any]:
    """The manifest of the model's dataset, or ``Unusable`` when the dataset
    is gone. Read from the dataset's folder without a query for its row:
    Classify one asks for it with every image, and the query was about a
    tenth of the web's time for one (docs/benchmarks.md)."""
    dataset_id = model.params.get("dataset")
    valid = isinstance(dataset_id, int) and not isinstance(dataset_id, bool) and dataset_id > 0
    read = dataset_services.manifest_of(dataset_id) if valid else None
    if read is None:
        raise Unusable("The model's dataset is gone.")
    return read


def classes(model: Job) -> list[str]:
    return list(manifest(model)["classes"])
