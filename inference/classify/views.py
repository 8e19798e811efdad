"""Classify one: the page of a model (``/models/<id>/classify``) and
``POST /api/models/<id>/classify``. The page's script calls the API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from jobs.models import ACTIVE
from web.api import BadRequest, api, error, json_body

from .. import trained
from .forms import MAX_IMAGE_BYTES, ClassifyForm
from .gallery import gallery
from .services import Refused, classify, problem, refusal


@login_required
def page(request: HttpRequest, model_id: int) -> HttpResponse:
    model = trained.model_or_404(model_id)
    reason = problem(model) or refusal(request.user, model)
    return render(request, "inference/classify.html", {
        "job": model, "problem": reason, "training": model.status in ACTIVE, "snapshots": trained.snapshots(model),
        "classes": [] if reason else trained.classes(model), "gallery": gallery(model),
        "max_megabytes": MAX_IMAGE_BYTES // 2**20, "data": {"api": reverse("api-model-classify", args=[model.pk])}})


@api("POST")
def classify_api(request: HttpRequest, model_id: int) -> JsonResponse:
    model = trained.model_or_404(model_id)
    if request.content_type == "application/json":
        form = ClassifyForm(model, json_body(request))
    else:
        form = ClassifyForm(model, request.POST, request.FILES)
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    data = form.cleaned_data
    try:
        answer = classify(request.user, model, data["image_bytes"], source=data["source"], snapshot=data["snapshot"],
                          visualize=data["visualize"], class_index=data["class"], layer=data["layer"])
    except Refused as exc:
        if exc.errors:
            raise BadRequest(exc.errors) from None
        refused = error(str(exc), exc.status)
        if exc.retry_after is not None:
            refused["Retry-After"] = str(exc.retry_after)
        return refused
    return JsonResponse(answer)
