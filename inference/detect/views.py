"""Detect one's page of a model (``/models/<id>/detect``); its script
calls ``POST /api/models/<id>/detect`` (``api``) once per image and
filters the boxes by score and class itself."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from jobs.models import ACTIVE

from .. import trained
from ..oneimage import MAX_IMAGE_BYTES
from .services import problem, refusal


@login_required
def page(request: HttpRequest, model_id: int) -> HttpResponse:
    model = trained.model_or_404(model_id)
    reason = problem(model) or refusal(request.user, model)
    classes = [] if reason else trained.classes(model)
    return render(request, "inference/detect.html", {
        "job": model, "problem": reason, "training": model.status in ACTIVE, "snapshots": trained.snapshots(model),
        "classes": classes, "max_megabytes": MAX_IMAGE_BYTES // 2**20,
        "data": {"api": reverse("api-model-detect", args=[model.pk]), "classes": classes}})
