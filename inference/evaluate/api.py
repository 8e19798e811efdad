"""The JSON API of evaluations (see ``openapi``): evaluate a
model on a split, classify many (a list, a folder, an archive), read a
report and its rows, and Compare a group's models."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from jobs import serialize, uploadfiles
from jobs.models import Job
from web.api import BadRequest, api, json_body

from .. import trained
from . import results, services
from .forms import EvaluationForm, SplitForm
from .views import evaluation_or_404


def _created(job: Job) -> JsonResponse:
    return JsonResponse({**serialize.job_detail(job), "note": job.params.get("note") or ""}, status=201)


def _split_form(request: HttpRequest) -> SplitForm:
    form = SplitForm({"split": "val", **json_body(request)})
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    return form


@api("POST")
def evaluate(request: HttpRequest, model_id: int) -> JsonResponse:
    model = trained.model_or_404(model_id)
    form = _split_form(request)
    try:
        job = services.evaluate(request.user, model, form.cleaned_data["split"], form.cleaned_data["snapshot"],
                                form.cleaned_data["score_threshold"])
    except trained.Unusable as exc:
        raise BadRequest({exc.field: [str(exc)]}) from None
    return _created(job)


def _defaults() -> dict[str, Any]:
    return {name: field.initial for name, field in EvaluationForm.base_fields.items() if field.initial is not None}


@api("POST")
def create(request: HttpRequest) -> JsonResponse:
    """Fields left out take the page's defaults, in a JSON body (lists and
    folders) as in a multipart one (an archive or a list file)."""
    if refused := uploadfiles.refusal(request):
        return refused
    if request.content_type == "application/json":
        form = EvaluationForm({**_defaults(), **json_body(request)})
    else:
        form = EvaluationForm({**_defaults(), **request.POST.dict()}, request.FILES)
    if refused := uploadfiles.refusal(request):
        return refused
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    try:
        return _created(form.submit(request.user))
    except trained.Unusable as exc:  # the model changed since the form looked
        raise BadRequest({exc.field: [str(exc)]}) from None


@api("GET")
def report(request: HttpRequest, job_id: int) -> JsonResponse:
    job = evaluation_or_404(job_id)
    found = results.report(job)
    return JsonResponse({"id": job.pk, "status": job.status, "model": job.params.get("model"),
                         "note": job.params.get("note") or "", "report": found})


@api("GET")
def rows(request: HttpRequest, job_id: int) -> JsonResponse:
    try:
        return JsonResponse(results.select(evaluation_or_404(job_id), request.GET.dict()))
    except results.BadQuery as exc:
        raise BadRequest(exc.errors) from None


@api("GET", "POST")
def compare(request: HttpRequest, owner: str, group: str) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse({"group": group, "owner": owner, "evaluations": services.compare_rows(owner, group)})
    form = _split_form(request)
    try:
        queued, skipped = services.compare(request.user, owner, group, form.cleaned_data["split"],
                                           form.cleaned_data["score_threshold"])
    except trained.Unusable as exc:
        raise BadRequest({"group": [str(exc)]}) from None
    return JsonResponse({"jobs": serialize.job_summaries(queued), "skipped": skipped}, status=201)
