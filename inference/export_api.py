"""The JSON API of model archives: ``POST /api/models/<id>/export`` makes
(or reuses) the export job of a snapshot; ``GET /api/exports/<id>/archive``
downloads it once made."""

from __future__ import annotations

from django import forms
from django.http import FileResponse, HttpRequest, JsonResponse

from jobs import serialize
from web.api import BadRequest, api, json_body

from . import exports, trained
from .export_views import archive_response


class SnapshotForm(forms.Form):
    snapshot = forms.CharField(required=False, max_length=200, help_text="Empty: the best one.")


@api("POST")
def export(request: HttpRequest, model_id: int) -> JsonResponse:
    model = trained.model_or_404(model_id)
    form = SnapshotForm(json_body(request))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    try:
        job, created = exports.export(request.user, model, form.cleaned_data["snapshot"])
    except trained.Unusable as exc:
        raise BadRequest({exc.field: [str(exc)]}) from None
    return JsonResponse({**serialize.job_detail(job), **exports.download_urls(job),
                         "ready": exports.archive_path(job) is not None}, status=201 if created else 200)


@api("GET")
def archive(request: HttpRequest, job_id: int) -> FileResponse:
    return archive_response(request, job_id)
