"""``POST /api/models/<id>/classify``: one image through the model server
(see ``services``), refused with the status each refusal means."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from trainer.tasks.uses import CLASSIFY
from training.modeljobs import unavailable
from web.api import BadRequest, api, json_body

from .. import trained
from ..oneimage import Refused
from . import services
from .forms import ClassifyForm


@api("POST")
def classify(request: HttpRequest, model_id: int) -> JsonResponse:
    model = trained.model_or_404(model_id)
    if reason := unavailable(model, CLASSIFY):  # before the form reads an image for nothing
        raise BadRequest({"model": [reason]})
    if request.content_type == "application/json":
        form = ClassifyForm(model, json_body(request))
    else:
        form = ClassifyForm(model, request.POST, request.FILES)
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    data = form.cleaned_data
    try:
        answer = services.classify(request.user, model, data["image_bytes"], source=data["source"],
                                   snapshot=data["snapshot"], visualize=data["visualize"], class_index=data["class"],
                                   layer=data["layer"])
    except Refused as exc:
        return exc.answer()
    return JsonResponse(answer)
