"""What "a model" is, for every app that uses one (classify, evaluate,
export, pretrained, groups): a training job. The apps ask here rather than
spell the kind's name, so that a model of any task is found the same way."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from jobs.models import Job

# The job kind that trains a model (registered in ``training.apps``).
MODEL_KIND = "train"


def models() -> QuerySet[Job]:
    return Job.objects.filter(kind=MODEL_KIND)


def is_model(job: Job) -> bool:
    return job.kind == MODEL_KIND


def model_or_none(model_id: Any) -> Job | None:
    """The model ``model_id`` names, or None for anything else (a job of
    another kind, an id of no job, a value that is no id)."""
    return models().filter(pk=model_id).first() if isinstance(model_id, int) and not isinstance(model_id, bool) else None
