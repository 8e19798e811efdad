"""Creating evaluations: one model on a split of its dataset (the Evaluate
button), on files (a list, a server folder, an archive: the form, as the
model's task takes them), or every model of a group on the same split
(Compare); and what they check of a model first."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse

from jobs import services
from jobs.models import ACTIVE, Job, Priority
from jobs.permissions import network_refusal
from trainer import jobfiles
from trainer.tasks import UnknownTask, task_of
from trainer.tasks.base import EVALUATION_OPTIONS
from trainer.tasks.uses import EVALUATE
from training.modeljobs import models, offers, unavailable
from web.serverfolders import roots

from .. import trained
from .results import summary

KIND = "evaluation"
TOP_N = 5
SPLITS = {"val": "validation", "test": "test"}


def split_count(model: Job, split: str) -> int:
    return int(((trained.manifest(model).get("splits") or {}).get(split) or {}).get("count") or 0)


def check(model: Job, snapshot: str) -> str:
    """Refuse a model that cannot be evaluated, with the reason; else a note
    for the user ("" when there is nothing to say)."""
    if reason := unavailable(model, EVALUATE):
        raise trained.Unusable(reason)
    if not (model.folder / jobfiles.CONFIG).is_file():
        raise trained.Unusable("The model has not started training yet: it has no snapshot to evaluate.")
    names = trained.snapshots(model)
    if not names:
        raise trained.Unusable("The model has no snapshot yet: evaluate it once it has saved one.")
    if snapshot and snapshot not in names:
        raise trained.Unusable(f"The model has no snapshot {snapshot!r}; it has {', '.join(names)}.", "snapshot")
    if model.status in ACTIVE and not snapshot:
        return "The model is still training: the evaluation uses its newest snapshot."
    return ""


FILE_SOURCES = ("list", "folder", "archive")
# Each source as a refusal names it.
SOURCE_NAMES = {"split": "a split of their dataset", "list": "a text list", "folder": "a folder on the server",
                "archive": "an uploaded archive"}


def takes_files(model: Job) -> bool:
    """Whether the model's task evaluates new images (a list, a folder or an
    archive) beside its dataset's splits (``Task.evaluation_sources``)."""
    task = task_of(model.params)
    return offers(model, EVALUATE) and any(task.evaluates_from(source) for source in FILE_SOURCES)


def check_source(model: Job, source: str) -> None:
    """Refuse a source the model's task does not evaluate from, saying what
    it takes; ``check`` first."""
    task = task_of(model.params)
    if not task.evaluates_from(source):
        taken = [SOURCE_NAMES[name] for name in task.evaluation_sources]
        files = f" of {task.labelled_files}" if any(name in FILE_SOURCES for name in task.evaluation_sources) else ""
        listed = taken[0] if len(taken) == 1 else f"{', '.join(taken[:-1])} or {taken[-1]}"
        raise trained.Unusable(f"{task.label} models are not evaluated on {SOURCE_NAMES[source]}: they take "
                               f"{listed}{files}.", "source")


def report_options(model: Job, score_threshold: float | None) -> dict[str, Any]:
    """The job's ``report_options``: the score threshold, for a task that
    takes one (its default when None)."""
    task = task_of(model.params)
    if not task.takes_evaluation_option("score_threshold"):
        return {}
    return {"score_threshold": EVALUATION_OPTIONS["score_threshold"] if score_threshold is None else score_threshold}


def check_split(model: Job, split: str) -> None:
    if not split_count(model, split):
        raise trained.Unusable(f"The model's dataset has no {SPLITS[split]} images.", "split")


def resources_like(model: Job) -> dict[str, Any]:
    """A GPU when the model trained on one, else the CPU."""
    return {"device": "gpu", "count": 1} if model.resources.get("device") == "gpu" else {"device": "cpu", "count": 1}


def params(model: Job, source: dict[str, Any], snapshot: str = "", top_n: int = TOP_N, **extra: Any) -> dict[str, Any]:
    """The job's config (see ``trainer/inference/job.py``)."""
    return {"model": model.pk, "model_dir": str(model.folder), "snapshot": snapshot or None, "source": source,
            "roots": [str(root) for root in roots()], "top_n": top_n,
            "archive_limits": {"max_total_bytes": settings.ARCHIVE_MAX_BYTES, "max_ratio": settings.ARCHIVE_MAX_RATIO},
            **extra}


def submit(owner: User, model: Job, source: dict[str, Any], *, name: str = "", snapshot: str = "",
           top_n: int = TOP_N, resources: dict[str, Any] | None = None, group: str = "", notes: str = "",
           prepare: Callable[[Job], None] | None = None, priority: str = Priority.NORMAL, **extra: Any) -> Job:
    """Queue an evaluation of ``model`` (checked: ``trained.Unusable``
    otherwise); anyone signed in may evaluate any model, the job is theirs."""
    note = check(model, snapshot)
    check_source(model, source["type"])
    if source["type"] == "split":
        extra["dataset_job"] = model.params.get("dataset")
        check_split(model, source["split"])
    return services.submit(owner, KIND, name or f"Evaluation of {model.name}",
                           params(model, source, snapshot, top_n, note=note, **extra),
                           resources or resources_like(model), group=group, notes=notes, prepare=prepare,
                           priority=priority)


def evaluate(owner: User, model: Job, split: str, snapshot: str = "", score_threshold: float | None = None) -> Job:
    """The Evaluate button: the model's best snapshot on its validation or
    test split (at ``score_threshold``, for a task that takes one)."""
    return submit(owner, model, {"type": "split", "split": split}, snapshot=snapshot,
                  name=f"{model.name}: {SPLITS[split]}", report_options=report_options(model, score_threshold))


def group_models(group_owner: str, group: str) -> QuerySet[Job]:
    """The models of ``group_owner``'s group (groups are each user's own)."""
    return models().filter(owner__username=group_owner, group=group).order_by("created_at", "id")


def compare(owner: User, group_owner: str, group: str, split: str,
            score_threshold: float | None = None) -> tuple[list[Job], list[str]]:
    """Evaluate every model of ``group_owner``'s ``group`` that has a snapshot
    on ``split`` (at ``score_threshold``, those of a task that takes one), as
    evaluations of ``owner``'s; the evaluations and, for each model left out
    (no such snapshot, a network of code ``owner`` may not run), why."""
    queued, skipped = [], []
    with transaction.atomic():
        for model in group_models(group_owner, group):
            if refusal := network_refusal(owner, model, "evaluate it"):
                skipped.append(f"{model.name}: {refusal}")
                continue
            try:
                queued.append(submit(owner, model, {"type": "split", "split": split},
                                     name=f"{model.name}: {SPLITS[split]}", compare=group,
                                     report_options=report_options(model, score_threshold)))
            except trained.Unusable as exc:
                skipped.append(f"{model.name}: {exc}")
    if not queued and not skipped:
        raise trained.Unusable("The group has no model.")
    return queued, skipped


def takes_score_threshold(group_owner: str, group: str) -> bool:
    """Whether a model of the group is of a task whose evaluations take a score threshold."""
    for model in group_models(group_owner, group):
        with contextlib.suppress(UnknownTask):
            if task_of(model.params).takes_evaluation_option("score_threshold"):
                return True
    return False


def compare_rows(group_owner: str, group: str) -> list[dict[str, Any]]:
    """Per evaluation queued by a Compare of ``group_owner``'s ``group``,
    newest first: the model, the split, the status and, once done, the
    accuracies."""
    rows = []
    models = list(group_models(group_owner, group).values_list("pk", flat=True))
    for job in Job.objects.filter(kind=KIND, params__compare=group, params__model__in=models).order_by("-created_at", "-id"):
        rows.append({"id": job.pk, "url": reverse("job", args=[job.pk]), "model": job.params.get("model"),
                     "name": job.name, "status": job.status,
                     "progress": job.progress, "split": job.params["source"].get("split"), **summary(job)})
    return rows
