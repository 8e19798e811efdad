"""What "a model" is, for every app that uses one (classify, evaluate,
export, pretrained, groups): a training job. The apps ask here rather than
spell the kind's name, so that a model of any task is found the same way.

What a model can be used for is its task's to say (``Task.model_uses``):
a feature asks ``offers`` (or ``unavailable``, the sentence it shows
instead of its action and its API answers with) of one model, and lists
``models_offering`` to choose from. Features name a use by its constant
in ``trainer.tasks.uses``; none of them looks at a task's name."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from jobs.models import Job, job_of_kind
from trainer.tasks import DEFAULT, TASKS, Task, task_of, uses

# The job kind that trains a model (registered in ``training.apps``).
MODEL_KIND = "train"


def models() -> QuerySet[Job]:
    return Job.objects.filter(kind=MODEL_KIND)


def is_model(job: Job) -> bool:
    return job.kind == MODEL_KIND


def model_or_none(model_id: Any) -> Job | None:
    """The model ``model_id`` names, or None for anything else (a job of
    another kind, an id of no job, a value that is no id)."""
    return job_of_kind(model_id, MODEL_KIND)


def _task(model: Job) -> Task | None:
    """The model's task; None for a task this server does not know (any
    more), which offers nothing."""
    try:
        return task_of(model.params)
    except ValueError:
        return None


def offers(model: Job, use: str) -> bool:
    """Whether ``model``'s task says its models can be used for ``use`` (a
    name from ``trainer.tasks.uses``; ValueError for another)."""
    uses.check(use)
    task = _task(model)
    return task is not None and task.offers(use)


def unavailable(model: Job, use: str) -> str:
    """Why ``model`` cannot be used for ``use``, for the user: the sentence
    a feature shows instead of its action and answers its API with; ""
    when its task offers it."""
    if offers(model, use):
        return ""
    task = _task(model)
    described = task.label if task else f"“{model.params.get('task')}”"
    return f"{uses.LABELS[use]} is not available for {described} models."


def models_offering(use: str) -> QuerySet[Job]:
    """The models whose task offers ``use``: what a feature lists to choose
    from. A model without a recorded task is of the default one."""
    names = [name for name, task in TASKS.items() if task.offers(use)]
    found = Q(params__task__in=names)
    if DEFAULT in names:
        found |= Q(params__task__isnull=True) | Q(params__task=None) | Q(params__task="")
    return models().filter(found)
