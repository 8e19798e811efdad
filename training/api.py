"""The JSON API of model training: creating models, the learning rate
preview, a run's metrics, profiling requests, a group's runs and any
models compared."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404

from jobs import serialize
from jobs.models import Job
from trainer import jobfiles
from trainer.tasks import task_of
from web.api import BadRequest, api, json_body

from . import compare, modeljobs, searches, series, services
from .forms import NewModelForm
from .forms.search import MoreTrialsForm
from .jsondata import api_data
from .models import Search
from .views import preview


@api("POST")
def models(request: HttpRequest) -> JsonResponse:
    form = NewModelForm(api_data(NewModelForm, json_body(request)), user=request.user)
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    if form.cleaned_data["search"]:
        return JsonResponse({"search": searches.search_data(form.submit_search(request.user))}, status=201)
    jobs = [serialize.job_detail(job) for job in form.submit(request.user)]
    warning = form.few_steps_warning()
    return JsonResponse({"jobs": jobs, **({"warning": warning} if warning else {})}, status=201)


@api("POST")
def lr_preview(request: HttpRequest) -> JsonResponse:
    return JsonResponse(preview(json_body(request)))


@api("GET")
def metrics(request: HttpRequest, job_id: int) -> JsonResponse:
    job = get_object_or_404(modeljobs.models(), pk=job_id)
    try:
        points = series.clamp_points(request.GET.get("points"))
    except ValueError as exc:
        raise BadRequest({"points": [str(exc)]}) from None
    return JsonResponse(series.view(job.folder, lambda run: run.metrics(task_of(job.params), points)))


@api("POST")
def profile(request: HttpRequest, job_id: int) -> JsonResponse:
    services.request_profile(get_object_or_404(Job, pk=job_id), request.user)
    return JsonResponse({"requested": True, "file": jobfiles.PROFILE_REQUEST}, status=202)


@api("GET")
def group(request: HttpRequest, owner: str, group: str) -> JsonResponse:
    try:
        points = series.clamp_points(request.GET.get("points") or str(services.GROUP_POINTS))
    except ValueError as exc:
        raise BadRequest({"points": [str(exc)]}) from None
    return JsonResponse(services.group_data(owner, group, points))


@api("GET")
def compare_runs(request: HttpRequest) -> JsonResponse:
    """The selected models side by side (``compare.compare_data``); ``points``
    sets the points of each curve, else each run gets its share of a budget;
    ``curves`` the metrics whose curves come (comma-separated; all without it)."""
    try:
        selection = compare.Selection.from_query(request.GET.dict())
        points = series.clamp_points(request.GET["points"]) if request.GET.get("points") else None
        curves = request.GET.get("curves")
        return JsonResponse(compare.compare_data(selection, points, curves.split(",") if curves else None))
    except compare.SelectionError as exc:
        raise BadRequest({"selection": [str(exc)]}) from None
    except ValueError as exc:
        raise BadRequest({"points": [str(exc)]}) from None


@api("GET")
def search(request: HttpRequest, search_id: int) -> JsonResponse:
    """A search: its space, sampler, pruner, trials with their values, the best, the importances."""
    return JsonResponse(searches.search_data(get_object_or_404(Search.objects.select_related("owner"), pk=search_id)))


@api("POST")
def search_more(request: HttpRequest, search_id: int) -> JsonResponse:
    """Continue a search with ``trials`` more."""
    found = get_object_or_404(Search.objects.select_related("owner"), pk=search_id)
    form = MoreTrialsForm(json_body(request))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    return JsonResponse(searches.search_data(searches.add_trials(found, request.user, form.cleaned_data["trials"])))
