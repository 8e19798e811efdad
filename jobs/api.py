"""The JSON API for jobs and resources (see ``jobs/openapi.py`` for the schema)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse

from trainer import jobfiles
from web.api import ActionError, BadRequest, api, json_body

from . import kinds, resources, serialize, services, sharing
from .forms import DeviceLimitForm, JobEditForm, QueuePlaceForm
from .logfile import tail_lines
from .models import Job

MAX_LOG_LINES = 5000
MAX_JOB_ID = 2**63 - 1  # the largest a job's id (a BigAutoField) can be


@api("GET", "POST")
def jobs(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse({"jobs": serialize.job_summaries(services.filtered_jobs(request.GET.dict()))})
    data = json_body(request)
    name = data.pop("kind", None)
    kind = kinds.find(name) if isinstance(name, str) else None
    if kind and kind.create_endpoint:
        raise BadRequest({"kind": [f"Create {kind.name} jobs with POST {reverse(kind.create_endpoint)}."]})
    if kind is None or kind.create_form is None:
        creatable = [k.name for k in kinds.all_kinds() if k.create_form]
        raise BadRequest({"kind": [f"Choose one of: {', '.join(creatable)}."]})
    form_class = kind.create_form
    defaults = {name: field.initial for name, field in form_class.base_fields.items() if field.initial is not None}
    form = form_class({**defaults, **data})  # a field left out takes the default the page shows
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    job = form.submit(request.user)
    return JsonResponse(serialize.job_detail(job), status=201)


@api("GET", "PATCH", "DELETE")
def job(request: HttpRequest, job_id: int) -> HttpResponse:
    found = get_object_or_404(Job.objects.select_related("owner"), pk=job_id)
    if request.method == "DELETE":
        services.delete(found, request.user)
        return HttpResponse(status=204)
    if request.method == "PATCH":
        services.require_change(found, request.user)
        data = json_body(request)
        form = JobEditForm({**{f: getattr(found, f) for f in JobEditForm.Meta.fields}, **data}, instance=found)
        if not form.is_valid():
            raise BadRequest(form.errors.get_json_data())
        services.update(found, request.user, form.cleaned_data)
    return JsonResponse(serialize.job_detail(found))


@api("POST")
def abort(request: HttpRequest, job_id: int) -> JsonResponse:
    found = get_object_or_404(Job, pk=job_id)
    services.abort(found, request.user)
    found.refresh_from_db()
    return JsonResponse(serialize.job_detail(found), status=202)


@api("POST")
def restart(request: HttpRequest, job_id: int) -> JsonResponse:
    found = get_object_or_404(Job, pk=job_id)
    services.restart(found, request.user)
    found.refresh_from_db()
    return JsonResponse(serialize.job_detail(found), status=202)


@api("POST")
def clone(request: HttpRequest, job_id: int) -> JsonResponse:
    found = get_object_or_404(Job, pk=job_id)
    return JsonResponse(serialize.job_detail(services.clone(found, request.user)), status=201)


@api("POST")
def resume(request: HttpRequest, job_id: int) -> JsonResponse:
    found = get_object_or_404(Job, pk=job_id)
    return JsonResponse(serialize.job_detail(services.resume(found, request.user)), status=202)


@api("POST")
def queue_place(request: HttpRequest, job_id: int) -> JsonResponse:
    """A pending job's priority, or (staff) a move to the front of its queue."""
    found = get_object_or_404(Job, pk=job_id)
    form = QueuePlaceForm(json_body(request))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    sharing.change_place(found, request.user, form.cleaned_data["priority"], form.cleaned_data["front"])
    return JsonResponse(serialize.job_detail(found))


@api("POST")
def device_limit(request: HttpRequest, username: str) -> JsonResponse:
    """Staff: how many devices of a class the user may hold at once (null: the default)."""
    target = get_object_or_404(User, username=username)
    form = DeviceLimitForm(json_body(request))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    sharing.set_limit(request.user, target, form.cleaned_data["limit"])
    return JsonResponse({"user": target.username, "limit": sharing.limit_of(target)})


@api("POST")
def bulk(request: HttpRequest) -> JsonResponse:
    """Abort or delete several jobs; each job's result is reported on its own."""
    data = json_body(request)
    given = data.get("action")
    action = {"abort": services.abort, "delete": services.delete}.get(given) if isinstance(given, str) else None
    ids = data.get("ids")
    if action is None:
        raise BadRequest({"action": ["Choose abort or delete."]})
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise BadRequest({"ids": ["Give a list of job ids."]})
    results = {}
    # An id no database column holds (10**30) is no job's: asking would overflow the query.
    for found in Job.objects.filter(pk__in=[i for i in ids if 0 < i <= MAX_JOB_ID]):
        job_id = found.pk  # a deleted job's pk becomes None
        try:
            action(found, request.user)
            results[str(job_id)] = {"ok": True}
        except ActionError as exc:
            results[str(job_id)] = {"ok": False, "error": exc.message, "status": exc.status}
    for missing in set(ids) - {int(k) for k in results}:
        results[str(missing)] = {"ok": False, "error": "No such job.", "status": 404}
    return JsonResponse({"results": results})


@api("GET")
def log(request: HttpRequest, job_id: int) -> JsonResponse:
    found = get_object_or_404(Job, pk=job_id)
    try:
        count = min(int(request.GET.get("lines", 200)), MAX_LOG_LINES)
    except ValueError:
        raise BadRequest({"lines": ["Give a whole number of lines."]}) from None
    return JsonResponse({"lines": tail_lines(found.folder / jobfiles.LOG, count)})


@api("GET")
def resources_view(request: HttpRequest) -> JsonResponse:
    return JsonResponse(resources.snapshot())


@api("GET")
def me(request: HttpRequest) -> JsonResponse:
    user = request.user
    return JsonResponse({"id": user.pk, "username": user.username, "is_staff": user.is_staff})
