"""The training section of a model's job page and what it serves: the
metrics API, the files a run writes (snapshots, filter images, profiler
traces, the exported model) and profiling requests."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from digitslike.api import BadRequest, api
from jobs import services
from jobs.models import Job, Status
from jobs.views import _act

from . import groups, series

PROFILE_REQUEST = "profile.request"  # the trainer's telemetry.Profile.REQUEST
# The job folder's subfolders whose files anyone signed in may download.
SERVED_FOLDERS = ("checkpoints", "visuals", "profile", "export")
EXPORTED_MODEL = "export/model.pt"
# Images are shown in the page; everything else is a download.
INLINE_TYPES = ("image/png",)


def _train_job(job_id: int) -> Job:
    return get_object_or_404(Job, pk=job_id, kind="train")


def page_context(job: Job) -> dict[str, Any]:
    """What the job page adds for a training job (``JobKind.page_context``)."""
    def build(run: series.Run) -> dict[str, Any]:
        return {
            "through": run.seq,  # the page ignores live events it already holds
            "series": run.all_points(series.DEFAULT_POINTS),
            "snapshots": run.snapshot_list(),
            "best": run.best,
            "result": run.result,
            "network": run.network,
            "layers": run.layers,
            "perf": run.perf,
            "profile": run.profile,
            "hardware": run.hardware,
        }

    data = series.view(job.folder, build)
    for snapshot in data["snapshots"]:
        snapshot["exists"] = _servable(job, snapshot.get("file"))
    data.update({
        "job": job.pk,
        "status": job.status,
        "epochs": job.params.get("epochs"),
        "files_url": reverse("job-file", args=[job.pk, "_"])[:-1],
        "profile_api": reverse("api-job-profile", args=[job.pk]),
        "job_api": reverse("api-job", args=[job.pk]),
        "profile_requested": (job.folder / PROFILE_REQUEST).exists(),
    })
    return {
        "training": data,
        "training_model_file": model_file(job, data["best"], data["snapshots"]),
        "training_export": EXPORTED_MODEL if _servable(job, EXPORTED_MODEL) else None,
        "training_resumable": services.resumable(job),
    }


def model_file(job: Job, best: dict[str, Any] | None, snapshots: list[dict[str, Any]]) -> str | None:
    """The file "Download model" gives: the best snapshot, else the last one."""
    candidates = [best.get("file")] if best else []
    candidates += [s.get("file") for s in reversed(snapshots)]
    return next((f for f in candidates if _servable(job, f)), None)


def _served_path(job: Job, relative: str) -> Path | None:
    """The file ``relative`` names inside one of the job's served folders,
    or None: paths are resolved (links followed) before the check, so
    ``..`` and links cannot lead out."""
    root = job.folder.resolve()
    try:
        target = (root / relative).resolve()
        parts = target.relative_to(root).parts
    except (ValueError, OSError):
        return None
    if len(parts) < 2 or parts[0] not in SERVED_FOLDERS or not target.is_file():
        return None
    return target


def _servable(job: Job, relative: Any) -> bool:
    return isinstance(relative, str) and _served_path(job, relative) is not None


@login_required
def job_file(request: HttpRequest, job_id: int, relative: str) -> FileResponse:
    job = get_object_or_404(Job, pk=job_id)
    target = _served_path(job, relative)
    if target is None:
        raise Http404("No such file.")
    content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    return FileResponse(open(target, "rb"), content_type=content_type,
                        as_attachment=content_type not in INLINE_TYPES, filename=target.name)


def request_profile(job: Job, user: Any) -> Job:
    """Ask the running trainer to profile a few steps: it watches for the
    file, profiles, deletes the file and reports a ``profile`` event."""
    services.require_change(job, user)
    if job.kind != "train":
        raise services.ActionError("Only training jobs can be profiled.")
    job.refresh_from_db(fields=["status"])
    if job.status != Status.RUNNING:
        raise services.ActionError(
            f"The job is {job.get_status_display().lower()}; only a running training job can be profiled.")
    (job.folder / PROFILE_REQUEST).touch()
    return job


@login_required
@require_POST
def profile(request: HttpRequest, job_id: int) -> HttpResponse:
    return _act(request, job_id, request_profile, "Profile requested: the next few steps are profiled.")


@api("POST")
def api_profile(request: HttpRequest, job_id: int) -> JsonResponse:
    request_profile(get_object_or_404(Job, pk=job_id), request.user)
    return JsonResponse({"requested": True, "file": PROFILE_REQUEST}, status=202)


@api("GET")
def api_metrics(request: HttpRequest, job_id: int) -> JsonResponse:
    job = _train_job(job_id)
    try:
        points = series.clamp_points(request.GET.get("points"))
    except ValueError as exc:
        raise BadRequest({"points": [str(exc)]}) from None
    return JsonResponse(series.view(job.folder, lambda run: run.metrics(points)))


urlpatterns = [
    path("jobs/<int:job_id>/files/<path:relative>", job_file, name="job-file"),
    path("jobs/<int:job_id>/profile", profile, name="job-profile"),
    path("groups/<path:group>/", groups.group_page, name="group"),
]

api_urlpatterns = [
    path("jobs/<int:job_id>/metrics", api_metrics, name="api-job-metrics"),
    path("jobs/<int:job_id>/profile", api_profile, name="api-job-profile"),
    path("groups/<path:group>", groups.api_group, name="api-group"),
]
