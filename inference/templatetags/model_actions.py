"""``{% snapshot_actions job %}``: "Download model archive" and "Make
pretrained model" for a model's snapshots, on its page. (Inclusion tags
pass the CSRF token on to their template.)"""

from __future__ import annotations

from typing import Any

from django import template

from jobs.models import Job
from trainer import jobfiles

register = template.Library()


@register.inclusion_tag("inference/snapshot_actions.html")
def snapshot_actions(job: Job) -> dict[str, Any]:
    """The snapshots that exist, the best one first, then the newest."""
    files = jobfiles.snapshots(job.folder)
    ordered = [file for file in files if file == jobfiles.BEST_CHECKPOINT] + [
        file for file in reversed(files) if file != jobfiles.BEST_CHECKPOINT]
    return {"job": job, "snapshots": [(file, file.rsplit("/", 1)[-1]) for file in ordered],
            "best_file": jobfiles.BEST_CHECKPOINT}
