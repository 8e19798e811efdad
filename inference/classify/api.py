"""``POST /api/models/<id>/classify``: one image through the model server
(see ``services``), refused with the status each refusal means."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from trainer.tasks.uses import CLASSIFY
from web.api import api

from ..oneimage import answered
from . import services
from .forms import ClassifyForm


@api("POST")
def classify(request: HttpRequest, model_id: int) -> JsonResponse:
    return answered(request, model_id, CLASSIFY, ClassifyForm, lambda user, model, data: services.classify(
        user, model, data["image_bytes"], source=data["source"], snapshot=data["snapshot"],
        visualize=data["visualize"], class_index=data["class"], layer=data["layer"]))
