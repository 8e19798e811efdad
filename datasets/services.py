"""A built dataset as the web app sees it: its manifest, report and store."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from jobs.models import Job
from trainer import jobfiles
from trainer.datastore import SplitReader, folder_size
from trainer.tasks import task_of

SPLITS = ("train", "val", "test")


def job_or_404(job_id: int) -> Job:
    return get_object_or_404(Job, pk=job_id, kind="dataset")


def folder(job: Job) -> Path:
    return job.folder / jobfiles.DATASET


def manifest(job: Job) -> dict[str, Any] | None:
    try:
        return json.loads((folder(job) / jobfiles.MANIFEST).read_text())
    except FileNotFoundError:
        return None


def skipped(job: Job) -> list[dict[str, Any]]:
    try:
        return json.loads((folder(job) / jobfiles.SKIPPED).read_text())
    except FileNotFoundError:
        return []


@lru_cache(maxsize=32)
def _reader(path: str, split: str, encoding: str, shape: tuple[int, int, int], task: str, mtime: float) -> SplitReader:
    return SplitReader(Path(path), split, encoding, shape, task_of({"task": task}).targets)


def reader(job: Job, split: str, info: dict[str, Any]) -> SplitReader:
    path = folder(job)
    mtime = (path / jobfiles.MANIFEST).stat().st_mtime
    return _reader(str(path), split, info["encoding"], tuple(info["image_shape"]), task_of(info).name, mtime)


def disk_size(job: Job) -> int:
    return folder_size(folder(job))


def models_using(job: Job) -> QuerySet[Job]:
    """The jobs that name this dataset (``JobKind.dependents``: deleting it
    tells them, and they can no longer run)."""
    return Job.objects.filter(params__dataset=job.pk).exclude(pk=job.pk)
