"""The tasks a dataset and a model can have, each registered once here with
what the web side and the trainer share about it (``base.Task``), what
the web can do with its models among them (``uses``). A job's task is its
parameters' ``task``; a job from before tasks were recorded is a
classification one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import classification, detection, instance_segmentation, segmentation, uses
from .base import LOOP_SERIES, Metric, Task

__all__ = ["DEFAULT", "EVERY_SERIES", "TASKS", "Metric", "Task", "UnknownTask", "task_of", "uses"]

TASKS: dict[str, Task] = {task.name: task for task in (classification.TASK, detection.TASK, segmentation.TASK,
                                                       instance_segmentation.TASK)}
DEFAULT = classification.TASK.name


class UnknownTask(ValueError):
    """A job's task is none this server knows: made by another version of
    the app, or its task withdrawn. Its pages and API answer with the
    message; the job can still be listed, renamed and deleted."""


def task_of(params: Mapping[str, Any]) -> Task:
    """The task of a job with these parameters; UnknownTask for a name no
    task has."""
    name = params.get("task") or DEFAULT
    if name not in TASKS:
        raise UnknownTask(f"There is no task “{name}”: the tasks are {', '.join(TASKS)}.")
    return TASKS[name]


def _every_series() -> dict[str, tuple[str, str]]:
    found = dict(LOOP_SERIES)
    for task in TASKS.values():
        for name, source in task.series.items():
            if found.setdefault(name, source) != source:
                raise ValueError(f"Two tasks read the series {name} from different fields.")
    return found


# Every task's series: what a reader of any run's events collects. Two tasks
# that name one series read it from the same field (checked here, at import).
EVERY_SERIES = _every_series()
