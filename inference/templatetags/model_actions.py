"""What a model's page offers to do with it, each action or, where the
model's task does not offer it, the sentence saying so
(``training.modeljobs.unavailable``):

- ``{% classify_action job %}``: Classify an image;
- ``{% evaluate_actions job %}``: Evaluate on a split, and Classify many
  where its task evaluates new images;
- ``{% snapshot_actions job %}``: "Download model archive" and "Make
  pretrained model" for the snapshot chosen beside them.

(Inclusion tags pass the CSRF token on to their template.)"""

from __future__ import annotations

from typing import Any

from django import template

from inference.evaluate.services import takes_files
from jobs.models import Job
from trainer import jobfiles
from trainer.tasks.uses import CLASSIFY, EVALUATE, EXPORT, PRETRAINED
from training.modeljobs import unavailable

register = template.Library()


@register.inclusion_tag("inference/classify_action.html")
def classify_action(job: Job) -> dict[str, Any]:
    return {"job": job, "unavailable": unavailable(job, CLASSIFY)}


@register.inclusion_tag("inference/evaluate_button.html")
def evaluate_actions(job: Job) -> dict[str, Any]:
    return {"job": job, "unavailable": unavailable(job, EVALUATE), "classify_many": takes_files(job)}


@register.inclusion_tag("inference/snapshot_actions.html")
def snapshot_actions(job: Job) -> dict[str, Any]:
    """The snapshots that exist, the best one first, then the newest."""
    files = jobfiles.snapshots(job.folder)
    ordered = [file for file in files if file == jobfiles.BEST_CHECKPOINT] + [
        file for file in reversed(files) if file != jobfiles.BEST_CHECKPOINT]
    return {"job": job, "snapshots": [(file, file.rsplit("/", 1)[-1]) for file in ordered],
            "best_file": jobfiles.BEST_CHECKPOINT,
            "export_unavailable": unavailable(job, EXPORT), "pretrained_unavailable": unavailable(job, PRETRAINED)}
