"""Making pretrained models (from a snapshot, from an upload) and the
models that use one. What the New model page offers of them is the
training app's (``training.services.pretrained_models``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet

from inference.snapshots import snapshot_file, stem
from inference.trained import Unusable
from jobs import services, uploadfiles
from jobs.models import Job
from trainer import jobfiles
from trainer.tasks.uses import PRETRAINED
from training.modeljobs import models, unavailable
from training.services import PRETRAINED_KIND, RUN_CODE

KIND = PRETRAINED_KIND
RESOURCES = {"device": "cpu", "count": 1}  # reading and checking weights is quick on the CPU


def from_snapshot(owner: User, model: Job, snapshot: str = "") -> Job:
    """Queue a pretrained model of ``model``'s ``snapshot`` (default: the
    best one); ``trained.Unusable`` when there is no such snapshot or the
    model's task does not offer starting new models from its weights."""
    if reason := unavailable(model, PRETRAINED):
        raise Unusable(reason)
    name = snapshot_file(model, snapshot)
    source = {"type": "snapshot", "model": model.pk, "model_dir": str(model.folder), "snapshot": name}
    return services.submit(owner, KIND, f"{model.name} ({stem(name)})", _params(owner, source), dict(RESOURCES))


def from_upload(owner: User, name: str, upload: UploadedFile, network: str, group: str = "", notes: str = "") -> Job:
    """Queue a pretrained model of an uploaded archive or state dict (for
    the standard network ``network``), kept in the job's folder; the
    params name it (``source["path"]``), so a clone takes it along."""

    def store(job: Job) -> None:
        uploadfiles.keep_in_job(job, {"path": (jobfiles.PRETRAINED_UPLOAD, upload)})

    source = {"type": "upload", "file_name": upload.name, "network": network}
    return services.submit(owner, KIND, name, _params(owner, source), dict(RESOURCES), group=group, notes=notes,
                           prepare=store)


def _params(owner: User, source: dict[str, Any]) -> dict[str, Any]:
    return {"source": source, "may_run_code": owner.has_perm(RUN_CODE)}


def models_using(job: Job) -> QuerySet[Job]:
    """The models fine-tuned from it (``JobKind.dependents``)."""
    return models().filter(params__pretrained__job=job.pk)
