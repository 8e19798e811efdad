"""Model archives: an export job turns one snapshot of a trained model into
``export/model.zip`` (``trainer.export_job``). Asking again for the same
snapshot, unchanged since, gives the export already made or under way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse
from django.utils.text import get_valid_filename

from jobs import services
from jobs.models import ACTIVE, Job, Status
from trainer import eventkinds, eventlog
from trainer.jobfiles import MODEL_ARCHIVE
from trainer.tasks.uses import EXPORT
from training.modeljobs import models, unavailable

from ..snapshots import snapshot_file, stamp, stem
from ..trained import Unusable

KIND = "export"
RESOURCES = {"device": "cpu", "count": 1}  # the exporters run on the CPU


def archive_path(job: Job) -> Path | None:
    """The finished archive of an export job, or None."""
    path = job.folder / MODEL_ARCHIVE
    return path if job.status == Status.DONE and path.is_file() else None


def download_name(job: Job) -> str:
    """What the archive is called when downloaded: the model and the snapshot, ``lenet-epoch-5.zip``."""
    return get_valid_filename(f"{job.params.get('model_name') or 'model'}-{stem(job.params['snapshot'])}.zip")


def _reusable(job: Job, snapshot_stamp: list[int]) -> bool:
    if job.params.get("snapshot_stamp") != snapshot_stamp:
        return False
    return job.status in ACTIVE or archive_path(job) is not None


def export(owner: User, model: Job, snapshot: str = "") -> tuple[Job, bool]:
    """The export job of ``model``'s ``snapshot`` (default: the best one)
    and whether it is new: one already made or under way for the same,
    unchanged, snapshot is reused. ``trained.Unusable`` when there is no
    such snapshot or the model's task does not offer export; anyone signed
    in may export any model."""
    if reason := unavailable(model, EXPORT):
        raise Unusable(reason)
    name = snapshot_file(model, snapshot)
    snapshot_stamp = stamp(model, name)
    # Two first clicks at once must make one job: the model's row is locked
    # (PostgreSQL; SQLite's immediate transactions serialise the same block)
    # from the look for an earlier export until the new one is created.
    with transaction.atomic():
        Job.objects.select_for_update().only("pk").get(pk=model.pk)
        earlier = Job.objects.filter(kind=KIND, params__model=model.pk, params__snapshot=name)
        for job in earlier.order_by("-created_at", "-id"):
            if _reusable(job, snapshot_stamp):
                return job, False
        params = {"model": model.pk, "model_name": model.name, "model_dir": str(model.folder), "snapshot": name,
                  "snapshot_stamp": snapshot_stamp}
        job = services.submit(owner, KIND, f"{model.name}: archive of {stem(name)}", params, dict(RESOURCES))
    return job, True


def download_urls(job: Job) -> dict[str, str]:
    return {"archive_url": reverse("export-archive", args=[job.pk]),
            "archive_api": reverse("api-export-archive", args=[job.pk])}


def page_context(job: Job) -> dict[str, Any]:
    """What the job page shows of an export (``JobKind.page_context``): the
    model and snapshot, and the download once the archive is made."""
    results = [event["data"] for event in eventlog.read_all(job.folder) if event["kind"] == eventkinds.RESULT]
    model = models().filter(pk=job.params.get("model")).first()
    archive = archive_path(job)
    return {"export": {"model": model, "snapshot": job.params.get("snapshot"), "download_name": download_name(job),
                       "ready": archive is not None, "size": archive.stat().st_size if archive else None,
                       "result": results[-1] if results else None, **download_urls(job)}}
