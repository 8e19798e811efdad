"""The one place the dataset pages know tasks by name: each registered
task's New dataset form and what its dataset's pages add (``TaskPages``).
Everything else asks here, or asks the task's registration
(``trainer.tasks``). A task registered without pages here fails at import.

A request names its task by ``task`` (the page's ``?task=`` and hidden
field, the API's field); none is classification (``trainer.tasks.DEFAULT``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.http import QueryDict

from jobs.models import Job
from trainer.detection.coco_export import write_coco_zip
from trainer.tasks import DEFAULT, TASKS, Task, classification, detection, instance_segmentation, segmentation

from . import detection_pages, instance_pages, segmentation_pages
from .detection_form import DetectionDatasetForm
from .forms import BuildForm, DatasetForm, defaults
from .instance_form import InstanceDatasetForm
from .segmentation_form import SegmentationDatasetForm


@dataclass(frozen=True)
class TaskPages:
    form: type[BuildForm]
    # The template its dataset's job-page section adds (statistics), or "",
    # and what that template is given: section(job, manifest) -> context.
    section: str = ""
    section_context: Callable[[Job, dict[str, Any]], dict[str, Any]] | None = None
    # What the gallery draws over each image: "" nothing, "boxes" (its
    # targets' ``shown``), "masks" (its mask, ``mask``, coloured by class).
    overlay: str = ""
    # With "masks": whether its masks carry each pixel's object too (an RGB
    # PNG, red the class and green the object), outlined by the gallery.
    outlined: bool = False
    # What writes one of its built datasets (a folder) as a COCO zip to a
    # stream, when its datasets download as COCO.
    coco_export: Callable[[Path, IO[bytes]], None] | None = None


PAGES: dict[str, TaskPages] = {
    classification.TASK.name: TaskPages(DatasetForm),
    detection.TASK.name: TaskPages(DetectionDatasetForm, section="datasets/section_detection.html",
                                   section_context=detection_pages.section_context, overlay="boxes",
                                   coco_export=write_coco_zip),
    segmentation.TASK.name: TaskPages(SegmentationDatasetForm, section="datasets/section_segmentation.html",
                                      section_context=segmentation_pages.section_context, overlay="masks"),
    instance_segmentation.TASK.name: TaskPages(InstanceDatasetForm, section="datasets/section_instances.html",
                                               section_context=instance_pages.section_context, overlay="masks",
                                               outlined=True),
}
if set(PAGES) != set(TASKS):
    raise ImportError(f"The dataset pages know the tasks {sorted(PAGES)}, the registry {sorted(TASKS)}.")


class UnknownTask(ValueError):
    """A request names a task that is not registered; its message names those that are."""


def task_named(name: Any) -> Task:
    """The task a request names (None or "": the default); UnknownTask otherwise."""
    name = name or DEFAULT
    if not isinstance(name, str) or name not in TASKS:
        raise UnknownTask(f"There is no task “{name}”: the tasks are {', '.join(TASKS)}.")
    return TASKS[name]


def pages(task: Task) -> TaskPages:
    return PAGES[task.name]


def form_class(data: Mapping[str, Any]) -> type[BuildForm]:
    """The form of the task ``data`` names (its ``task``); UnknownTask."""
    return pages(task_named(data.get("task"))).form


def tabs() -> list[Task]:
    """The tasks the New dataset page offers, in their registry's order."""
    return list(TASKS.values())


def coco_tasks() -> list[Task]:
    """The tasks whose datasets download as COCO."""
    return [task for task in TASKS.values() if PAGES[task.name].coco_export]


def sent_field_errors(fields: QueryDict) -> dict[str, Any]:
    """The errors of the fields an upload sent before its file, in the API's
    shape: those of the form of the task sent (a ``task`` no task has is
    the error), the fields not sent yet at their defaults, and their own
    errors left out (they may still come, with the file)."""
    try:
        chosen = form_class(fields)
    except UnknownTask as exc:
        return {"task": [{"message": str(exc), "code": "unknown_task"}]}
    data = fields.copy()
    for name, value in defaults(chosen).items():
        data.setdefault(name, value)
    form = chosen(data)
    form.is_valid()
    return {field: found for field, found in form.errors.get_json_data().items() if field in fields}
