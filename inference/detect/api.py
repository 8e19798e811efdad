"""``POST /api/models/<id>/detect``: one image through the model server
(see ``services``), refused with the status each refusal means."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from trainer.tasks.uses import DETECT
from web.api import api

from ..oneimage import answered
from . import services
from .forms import DetectForm


@api("POST")
def detect(request: HttpRequest, model_id: int) -> JsonResponse:
    return answered(request, model_id, DETECT, DetectForm, lambda user, model, data: services.detect(
        user, model, data["image_bytes"], source=data["source"], snapshot=data["snapshot"]))
