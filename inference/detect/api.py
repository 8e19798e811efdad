"""``POST /api/models/<id>/detect``: one image through the model server
(see ``services``), refused with the status each refusal means."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from trainer.tasks.uses import DETECT
from training.modeljobs import unavailable
from web.api import BadRequest, api, json_body

from .. import trained
from ..oneimage import Refused
from . import services
from .forms import DetectForm


@api("POST")
def detect(request: HttpRequest, model_id: int) -> JsonResponse:
    model = trained.model_or_404(model_id)
    if reason := unavailable(model, DETECT):  # before the form reads an image for nothing
        raise BadRequest({"model": [reason]})
    if request.content_type == "application/json":
        form = DetectForm(model, json_body(request))
    else:
        form = DetectForm(model, request.POST, request.FILES)
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    data = form.cleaned_data
    try:
        return JsonResponse(services.detect(request.user, model, data["image_bytes"], source=data["source"],
                                            snapshot=data["snapshot"]))
    except Refused as exc:
        return exc.answer()
