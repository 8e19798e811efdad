"""An evaluation's results as the web app reads them: the report, the rows
(filtered and paged for the table and the galleries) and each row's image,
from the dataset's store or from the images the job kept."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from django.urls import reverse

from datasets import services as dataset_services
from jobs.models import Job
from trainer.datastore import png_bytes
from trainer.evaluation_files import IMAGES, OUTPUT, REPORT, RESULTS
from trainer.tasks import TASKS
from web.api import whole_number

OUTCOMES = ("correct", "wrong", "unlabelled", "unreadable")
MAX_PAGE_SIZE = 500
# With this many classes or fewer top-5 accuracy is always 100% (see ``report``).
TOP5_CLASSES = 5
LISTS = ("mistakes",)  # lists of row numbers in the report that the rows API pages through
# A report's ``layout`` when its rows are a task's own (detections, images
# scored by their masks; see ``Training.split_report``) rather than an
# image's top 5: the rows API does not page them, the downloads give them.
OWN_ROWS = {"boxes": "its detections", "masks": "its images' scores by their masks"}
# What lists and Compare show of a finished evaluation: every task's metrics.
SUMMARY = (*dict.fromkeys(metric.field for task in TASKS.values() for metric in task.metrics),
           "count", "labelled", "snapshot")


class BadQuery(Exception):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(str(errors))
        self.errors = errors


def folder(job: Job) -> Path:
    return job.folder / OUTPUT


@lru_cache(maxsize=16)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _read(path: Path) -> Any:
    """The JSON file, parsed once per version of it; None while there is none."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


def report(job: Job) -> dict[str, Any] | None:
    """The job's report, without top-5 where it says nothing: with five
    classes or fewer it is always 100%, and the report leaves it out then,
    as the training charts do (``showTop5`` in the training page's script)."""
    found = _read(folder(job) / REPORT)
    if found is None or len(found.get("classes", [])) > TOP5_CLASSES:
        return found
    return {key: value for key, value in found.items() if key != "top5"}


def rows(job: Job) -> list[dict[str, Any]]:
    found = _read(folder(job) / RESULTS)
    return found["rows"] if found else []


def summary(job: Job) -> dict[str, Any]:
    """The accuracies of a finished evaluation, for lists and Compare."""
    found = report(job)
    if not found:
        return {}
    return {key: found[key] for key in SUMMARY if key in found}


def outcome(row: dict[str, Any]) -> str:
    if not row["top"]:
        return "unreadable"
    if row["label"] is None:
        return "unlabelled"
    return "correct" if row["top"][0][0] == row["label"] else "wrong"


def _index(query: dict[str, str], key: str, limit: int) -> int | None:
    raw = query.get(key, "")
    if raw == "":
        return None
    number = whole_number(raw, limit - 1)
    if number is None:
        raise BadQuery({key: [f"Give a number from 0 to {limit - 1}."]})
    return number


def _chosen(query: dict[str, str], count: int) -> list[int] | None:
    raw = query.get("rows", "")
    if raw == "":
        return None
    chosen = [whole_number(part, count - 1) for part in raw.split(",")]
    if len(chosen) > MAX_PAGE_SIZE or None in chosen:
        raise BadQuery({"rows": [f"Give at most {MAX_PAGE_SIZE} row numbers below {count}, separated by commas."]})
    return chosen


def _listed(query: dict[str, str], found: dict[str, Any]) -> list[int] | None:
    """The report's list of row numbers ``query`` names (``list=mistakes``: most confident first), or None."""
    raw = query.get("list", "")
    if raw == "":
        return None
    if raw not in LISTS:
        raise BadQuery({"list": [f"The list must be one of {', '.join(LISTS)}."]})
    return found.get(raw) or []


def select(job: Job, query: dict[str, str]) -> dict[str, Any]:
    """One page of rows: ``label`` and ``predicted`` (class indices),
    ``outcome`` (correct, wrong, unlabelled, unreadable), ``rows`` (row
    numbers, in their order) or ``list`` (the report's mistakes, most
    confident first); ``page`` from 1 and ``size`` up to 500."""
    whole = report(job) or {}
    if whole.get("layout") in OWN_ROWS:
        raise BadQuery({"rows": [f"This evaluation's rows are {OWN_ROWS[whole['layout']]}, not pages of images: "
                                 "download them as JSON or CSV, or read them in the report."]})
    found, classes = rows(job), whole.get("classes", [])
    label, predicted = _index(query, "label", len(classes)), _index(query, "predicted", len(classes))
    wanted = query.get("outcome", "")
    if wanted and wanted not in OUTCOMES:
        raise BadQuery({"outcome": [f"Choose one of {', '.join(OUTCOMES)}."]})
    size, page = _index(query, "size", MAX_PAGE_SIZE + 1), _index(query, "page", 10**9)
    size, page = size or 50, page or 1
    chosen = _chosen(query, len(found))
    chosen = chosen if chosen is not None else _listed(query, whole)
    picked = [found[i] for i in chosen] if chosen is not None else [
        row for row in found
        if (label is None or row["label"] == label)
        and (predicted is None or (row["top"] and row["top"][0][0] == predicted))
        and (not wanted or outcome(row) == wanted)]
    shown = picked[(page - 1) * size:page * size]
    return {"total": len(picked), "page": page, "size": size, "rows": [expand(job, row, classes) for row in shown]}


def expand(job: Job, row: dict[str, Any], classes: list[str]) -> dict[str, Any]:
    """A row with class names and its image's address."""
    label = row["label"]
    return {"index": row["index"], "name": row["name"], "label": label,
            "label_name": classes[label] if label is not None else None,
            "top": [{"index": c, "class": classes[c], "probability": p} for c, p in row["top"] or []],
            "outcome": outcome(row), "error": row["error"],
            "image": reverse("evaluation-image", args=[job.pk, row["index"]]) if row["top"] else None}


def image(job: Job, index: int) -> bytes | None:
    """The PNG of row ``index``: from the model's dataset for a split, else
    the image the job kept; None when there is none."""
    source = job.params.get("source") or {}
    if source.get("type") == "split":
        dataset = Job.objects.filter(pk=job.params.get("dataset_job"), kind="dataset").first()
        manifest = dataset_services.manifest(dataset) if dataset else None
        if manifest is None or source.get("split") not in dataset_services.SPLITS:
            return None
        reader = dataset_services.reader(dataset, source["split"], manifest)
        return png_bytes(reader.image(index)) if index < len(reader) else None
    try:
        offsets = np.load(folder(job) / f"{IMAGES}-index.npy", mmap_mode="r")
    except FileNotFoundError:
        return None
    if index >= len(offsets) or not offsets[index][1]:
        return None
    offset, length = (int(v) for v in offsets[index])
    with open(folder(job) / f"{IMAGES}-images.bin", "rb") as handle:
        handle.seek(offset)
        return handle.read(length)
