"""The export pages: "Download model archive" on a model's page (it makes
or reuses the export job, whose page shows its progress and then the
download), and the archive itself, for the page and the API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from jobs.models import Job
from web.files import streamed_asynchronously

from .. import snapshot_requests
from . import services


@login_required
@require_POST
def export_model(request: HttpRequest, model_id: int) -> HttpResponse:
    return snapshot_requests.from_page(request, model_id, lambda user, model, snapshot:
                                       services.export(user, model, snapshot)[0])


def archive_response(request: HttpRequest, job_id: int) -> FileResponse:
    """The export job's archive as a zip download, read asynchronously; 404 until it is made."""
    job = get_object_or_404(Job, pk=job_id, kind=services.KIND)
    path = services.archive_path(job)
    if path is None:
        raise Http404("The export has no archive (yet).")
    response = FileResponse(open(path, "rb"), content_type="application/zip", as_attachment=True,
                            filename=services.download_name(job))
    return streamed_asynchronously(request, response)


@login_required
def archive(request: HttpRequest, job_id: int) -> FileResponse:
    return archive_response(request, job_id)
