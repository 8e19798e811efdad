"""The JSON API of datasets (see ``datasets/openapi.py`` for the schema):
create one, read one with its manifest, and browse the server folders that
imports may read."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse, QueryDict

from jobs import serialize, uploadfiles
from jobs.jobpaths import in_job_words
from web.api import BadRequest, api, bad_request_message, error, json_body
from web.serverfolders import OutsideRoots, listing

from . import services, taskpages
from .datasetsettings import public_manifest
from .forms import BuildForm, defaults


def _form(request: HttpRequest) -> BuildForm:
    """The form of the task the request names (``task``; none is
    classification); fields the request leaves out take the page's defaults,
    in a JSON body and in a multipart one (with an upload) alike. A task no
    task has is a BadRequest naming the tasks."""
    data = json_body(request) if request.content_type == "application/json" else request.POST.copy()
    try:
        form_class = taskpages.form_class(data)
    except taskpages.UnknownTask as exc:
        raise BadRequest({"task": [{"message": str(exc), "code": "unknown_task"}]}) from None
    if request.content_type == "application/json":
        return form_class({**defaults(form_class), **data})
    for name, value in defaults(form_class).items():
        data.setdefault(name, value)
    return form_class(data, request.FILES)


def early_refusal(fields: QueryDict, wants_json: bool) -> JsonResponse | None:
    """The answer to an upload whose fields sent before the file have errors
    (``web/fieldsfirst.py``): the one the whole form would get."""
    errors = taskpages.sent_field_errors(fields)
    return error(bad_request_message(errors), 400, errors=errors) if errors else None


@api("POST")
def create(request: HttpRequest) -> JsonResponse:
    if refused := uploadfiles.refusal(request):
        return refused
    form = _form(request)
    if refused := uploadfiles.refusal(request):  # the handler stopped the upload while the form read it
        return refused
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    return JsonResponse(serialize.job_detail(form.submit(request.user)), status=201)


@api("GET")
def dataset(request: HttpRequest, job_id: int) -> JsonResponse:
    job = services.job_or_404(job_id)
    return JsonResponse({**serialize.job_detail(job), "manifest": in_job_words(public_manifest(services.manifest(job))),
                         "used_by": [m.pk for m in services.models_using(job)]})


@api("GET")
def folders(request: HttpRequest) -> JsonResponse:
    try:
        return JsonResponse(listing(request.GET.get("path")))
    except OutsideRoots as exc:
        return error(str(exc), 403)
