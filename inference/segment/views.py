"""Segment one's page of a model (``/models/<id>/segment``); its script
calls ``POST /api/models/<id>/segment`` (``api``) once per image and
colours the mask by class itself, with the opacity slider and the class
toggles."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from jobs.models import ACTIVE

from .. import trained
from ..oneimage import MAX_IMAGE_BYTES
from .services import colours, problem, refusal


@login_required
def page(request: HttpRequest, model_id: int) -> HttpResponse:
    model = trained.model_or_404(model_id)
    reason = problem(model) or refusal(request.user, model)
    classes = [] if reason else trained.classes(model)
    shown = colours(model) if classes else []
    return render(request, "inference/segment.html", {
        "job": model, "problem": reason, "training": model.status in ACTIVE, "snapshots": trained.snapshots(model),
        "classes": list(zip(classes, shown, strict=True)), "max_megabytes": MAX_IMAGE_BYTES // 2**20,
        "data": {"api": reverse("api-model-segment", args=[model.pk]), "classes": classes, "colours": shown}})
