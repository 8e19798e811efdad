"""What a model's page offers to do with it, each action or, where the
model's task does not offer it, the sentence saying so
(``training.modeljobs.unavailable``):

- ``{% one_image_action job %}``: Classify an image, for a model that
  classifies, Detect objects in an image, for one that detects, or Segment
  an image, for one that segments; for a model that does none, why it
  cannot classify;
- ``{% evaluate_actions job %}``: Evaluate on a split (at a score
  threshold, where its task takes one), and Classify many where its task
  evaluates new images;
- ``{% snapshot_actions job %}``: "Download model archive" and "Make
  pretrained model" for the snapshot chosen beside them.

(Inclusion tags pass the CSRF token on to their template.)"""

from __future__ import annotations

from typing import Any

from django import template

from inference.evaluate.forms import SplitForm
from inference.evaluate.services import takes_files
from jobs.models import Job
from trainer import jobfiles
from trainer.tasks import task_of
from trainer.tasks.uses import CLASSIFY, DETECT, EVALUATE, EXPORT, PRETRAINED, SEGMENT
from training.modeljobs import offers, unavailable

register = template.Library()


@register.inclusion_tag("inference/one_image_action.html")
def one_image_action(job: Job) -> dict[str, Any]:
    classify, detect, segment = offers(job, CLASSIFY), offers(job, DETECT), offers(job, SEGMENT)
    return {"job": job, "classify": classify, "detect": detect, "segment": segment,
            "unavailable": "" if classify or detect or segment else unavailable(job, CLASSIFY)}


@register.inclusion_tag("inference/evaluate_button.html")
def evaluate_actions(job: Job) -> dict[str, Any]:
    task = task_of(job.params)
    return {"job": job, "unavailable": unavailable(job, EVALUATE),
            "files_action": takes_files(job) and task.files_action,
            "score_threshold": task.takes_evaluation_option("score_threshold") and SplitForm()["score_threshold"]}


@register.inclusion_tag("inference/snapshot_actions.html")
def snapshot_actions(job: Job) -> dict[str, Any]:
    """The snapshots that exist, the best one first, then the newest."""
    files = jobfiles.snapshots(job.folder)
    ordered = [file for file in files if file == jobfiles.BEST_CHECKPOINT] + [
        file for file in reversed(files) if file != jobfiles.BEST_CHECKPOINT]
    return {"job": job, "snapshots": [(file, file.rsplit("/", 1)[-1]) for file in ordered],
            "best_file": jobfiles.BEST_CHECKPOINT,
            "export_unavailable": unavailable(job, EXPORT), "pretrained_unavailable": unavailable(job, PRETRAINED)}
