"""The JSON API of model archives: ``POST /api/models/<id>/export`` makes
(or reuses) the export job of a snapshot; ``GET /api/exports/<id>/archive``
downloads it once made."""

from __future__ import annotations

from django.http import FileResponse, HttpRequest, JsonResponse

from jobs import serialize
from web.api import api

from .. import snapshot_requests
from . import services
from .views import archive_response


@api("POST")
def export(request: HttpRequest, model_id: int) -> JsonResponse:
    job, created = snapshot_requests.from_api(request, model_id, services.export)
    return JsonResponse({**serialize.job_detail(job), **services.download_urls(job),
                         "ready": services.archive_path(job) is not None}, status=201 if created else 200)


@api("GET")
def archive(request: HttpRequest, job_id: int) -> FileResponse:
    return archive_response(request, job_id)
