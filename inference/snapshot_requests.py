"""The requests that make a job of one snapshot of a trained model (an
export, a pretrained model): the page's form and the API's JSON name the
snapshot (empty: the best one), and a snapshot that cannot be used is the
user's message, on the model's page or as a 400 naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from jobs.models import Job
from web.api import BadRequest, json_body

from . import trained

Made = TypeVar("Made")


class SnapshotForm(forms.Form):
    snapshot = forms.CharField(required=False, max_length=200, help_text="Empty: the best one.")


def from_page(request: HttpRequest, model_id: int, make: Callable[[User, Job, str], Job]) -> HttpResponse:
    """``make(user, model, snapshot)`` for the form's snapshot; the made job's page, or the model's with why not."""
    model = trained.model_or_404(model_id)
    try:
        job = make(request.user, model, request.POST.get("snapshot", ""))
    except trained.Unusable as exc:
        messages.error(request, str(exc))
        return redirect("job", model.pk)
    return redirect("job", job.pk)


def from_api(request: HttpRequest, model_id: int, make: Callable[[User, Job, str], Made]) -> Made:
    """``make(user, model, snapshot)`` for the JSON body's snapshot."""
    model = trained.model_or_404(model_id)
    form = SnapshotForm(json_body(request))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    try:
        return make(request.user, model, form.cleaned_data["snapshot"])
    except trained.Unusable as exc:
        raise BadRequest({exc.field: [str(exc)]}) from None
