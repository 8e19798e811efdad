"""The JSON API of pretrained models: ``POST /api/pretrained`` uploads one
(multipart: the weights file, the name, the network of a state dict);
``POST /api/models/<id>/pretrained {snapshot}`` makes one from a snapshot.
Listing and deleting them is the jobs API's (category ``pretrained``)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from digitslike.api import BadRequest, api, json_body
from inference import trained
from inference.export_api import SnapshotForm
from jobs import serialize, uploadfiles

from . import services
from .forms import UploadForm


@api("POST")
def create(request: HttpRequest) -> JsonResponse:
    if refused := uploadfiles.refusal(request):
        return refused
    form = UploadForm(request.POST, request.FILES)
    if refused := uploadfiles.refusal(request):
        return refused
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    return JsonResponse(serialize.job_detail(form.submit(request.user)), status=201)


@api("POST")
def from_snapshot(request: HttpRequest, model_id: int) -> JsonResponse:
    model = trained.model_or_404(model_id)
    form = SnapshotForm(json_body(request))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    try:
        job = services.from_snapshot(request.user, model, form.cleaned_data["snapshot"])
    except trained.Unusable as exc:
        raise BadRequest({exc.field: [str(exc)]}) from None
    return JsonResponse(serialize.job_detail(job), status=201)
