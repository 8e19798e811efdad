"""The pretrained model pages: Upload pretrained model, "Make pretrained
model" on a model's page, and the section of a pretrained model's job page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from inference import snapshot_requests
from jobs import uploadfiles
from jobs.models import Job
from training.modeljobs import models
from training.services import pretrained_info

from . import services
from .forms import UploadForm


@login_required
def new_pretrained(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    if getattr(request, "upload_too_large", False):
        form.add_error(None, uploadfiles.too_large_message())
    elif request.method == "POST" and form.is_valid():
        job = form.submit(request.user)
        return redirect("job", job.pk)
    return render(request, "pretrained/new.html", {"form": form})


@login_required
@require_POST
def from_snapshot(request: HttpRequest, model_id: int) -> HttpResponse:
    return snapshot_requests.from_page(request, model_id, services.from_snapshot)


def page_context(job: Job) -> dict[str, Any]:
    """What the job page shows of a pretrained model (``JobKind.page_context``):
    where it comes from, and once made its network, classes and the models
    fine-tuned from it."""
    source = job.params.get("source") or {}
    model = models().filter(pk=source.get("model")).first() if source.get("type") == "snapshot" else None
    return {"pretrained": {"source": source, "model": model, "info": pretrained_info(job),
                           "used_by": list(services.models_using(job)[:20]),
                           "new_model_url": f"{reverse('new-model')}?pretrained_model={job.pk}"}}
