"""The JSON API of pretrained models: ``POST /api/pretrained`` uploads one
(multipart: the weights file, the name, the network of a state dict);
``POST /api/models/<id>/pretrained {snapshot}`` makes one from a snapshot.
Listing and deleting them is the jobs API's (category ``pretrained``)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from inference import snapshot_requests
from jobs import serialize, uploadfiles
from web.api import BadRequest, api

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
    job = snapshot_requests.from_api(request, model_id, services.from_snapshot)
    return JsonResponse(serialize.job_detail(job), status=201)
