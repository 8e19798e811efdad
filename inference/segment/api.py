"""``POST /api/models/<id>/segment``: one image through the model server
(see ``services``), refused with the status each refusal means."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from trainer.tasks.uses import SEGMENT
from web.api import api

from ..oneimage import answered
from . import services
from .forms import SegmentForm


@api("POST")
def segment(request: HttpRequest, model_id: int) -> JsonResponse:
    return answered(request, model_id, SEGMENT, SegmentForm, lambda user, model, data: services.segment(
        user, model, data["image_bytes"], source=data["source"], snapshot=data["snapshot"]))
