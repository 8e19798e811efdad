"""A built dataset as the web app sees it: its manifest, report and store."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse

from jobs.models import Job, folder_of
from trainer import jobfiles
from trainer.datastore import SplitReader, folder_size
from trainer.tasks import task_of

SPLITS = ("train", "val", "test")


def job_or_404(job_id: int) -> Job:
    return get_object_or_404(Job, pk=job_id, kind="dataset")


def folder(job: Job) -> Path:
    return job.folder / jobfiles.DATASET


def manifest(job: Job) -> dict[str, Any] | None:
    return manifest_at(folder(job))


def manifest_of(job_id: int) -> dict[str, Any] | None:
    """The manifest of dataset ``job_id`` read without its row (a dataset's
    folder goes when its row does: ``Job.delete_with_folder``); None when
    there is none."""
    return manifest_at(folder_of(job_id) / jobfiles.DATASET)


def manifest_at(dataset_folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((dataset_folder / jobfiles.MANIFEST).read_text())
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


def statistics(job: Job, info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each split's statistics (its task's ``TargetFormat.statistics``), for
    the splits with images, in ``SPLITS`` order: computed once per build
    (cached by the manifest's path and time) and shared, so not to be changed."""
    path = folder(job)
    mtime = (path / jobfiles.MANIFEST).stat().st_mtime
    splits = tuple(s for s in SPLITS if info["splits"][s]["count"])
    return _statistics(str(path), splits, tuple(info["classes"]), task_of(info).name, mtime)


@lru_cache(maxsize=32)
def _statistics(path: str, splits: tuple[str, ...], classes: tuple[str, ...], task: str,
                mtime: float) -> dict[str, dict[str, Any]]:
    targets = task_of({"task": task}).targets
    return {split: targets.statistics(targets.read(Path(path), split), list(classes)) for split in splits}


def drawn_targets(info: dict[str, Any], reader: SplitReader, positions: np.ndarray) -> dict[str, Any]:
    """What the gallery draws over the images at ``positions``: the
    ``classes``, the stored images' ``width`` and ``height`` (the boxes'
    pixels) and each image's targets as its format shows them
    (``images``: {position: [...]})."""
    height, width = info["image_shape"][:2]
    targets = task_of(info).targets
    return {"classes": info["classes"], "width": width, "height": height,
            "images": {str(int(i)): targets.shown(reader.targets, int(i)) for i in positions}}


def drawn_masks(job: Job, info: dict[str, Any], split: str, outlined: bool = False) -> dict[str, Any]:
    """What the gallery needs to colour the masks of ``split``: the
    ``classes``, their ``colours`` (``class_colours``),
    the stored images' ``width`` and ``height``, the address of a mask
    with ``{index}`` in it (``mask_url``), and whether the masks carry
    objects to outline (``outlined``)."""
    height, width = info["image_shape"][:2]
    url = reverse("dataset-mask", args=[job.pk, split, 0]).removesuffix("0.png") + "{index}.png"
    return {"classes": info["classes"], "colours": class_colours(info), "width": width, "height": height,
            "mask_url": url, "outlined": outlined}


def class_colours(info: dict[str, Any]) -> list[str]:
    """Each class's colour as CSS (``#rrggbb``), from the manifest's
    ``labelling`` (a segmentation dataset's); classes past its colours are grey."""
    given = (info.get("labelling") or {}).get("colours") or []
    return ["#{:02x}{:02x}{:02x}".format(*given[index]) if index < len(given) else "#808080"
            for index in range(len(info["classes"]))]


def disk_size(job: Job) -> int:
    return folder_size(folder(job))


def models_using(job: Job) -> QuerySet[Job]:
    """The jobs that name this dataset (``JobKind.dependents``: deleting it
    tells them, and they can no longer run)."""
    return Job.objects.filter(params__dataset=job.pk).exclude(pk=job.pk)
