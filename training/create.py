"""The New model page and its helpers: the learning rate preview, the editor
text of a standard network (Customize) and the layer table of a network
(Visualize); and the API that creates models."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.forms import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from digitslike.api import BadRequest, api, json_body
from jobs import serialize
from trainer import lr_policy
from trainer.networks.layerspec import NetworkError, validate_layers

from . import catalog
from .forms import RUN_CODE, NewModelForm, ScheduleForm, api_data, built_dataset


def _page_data(form: NewModelForm) -> dict[str, Any]:
    """What the page's script needs: which fields each policy and solver uses,
    the standard networks and the earlier models to start from."""
    return {
        "policies": {name: params for name, _label, params in lr_policy.POLICIES},
        "policy_defaults": lr_policy.DEFAULTS,
        "momentum": [name for name, solver in catalog.solvers().items() if solver["momentum"]],
        "networks": catalog.networks(),
        "previous": form.previous,
        "may_run_code": form.may_run_code,
    }


@login_required
def new_model(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = NewModelForm(request.POST, user=request.user)
        if form.is_valid():
            jobs = form.submit(request.user)
            if len(jobs) == 1:
                return redirect("job", jobs[0].pk)
            return redirect(reverse("group", args=[jobs[0].group]))
    else:
        initial = {"dataset": request.GET["dataset"]} if request.GET.get("dataset", "").isdigit() else {}
        form = NewModelForm(initial=initial, user=request.user)
    context = {"form": form, "page_data": _page_data(form)}
    return render(request, "training/new.html", context, status=400 if request.method == "POST" else 200)


def _preview(data: dict[str, Any]) -> dict[str, Any]:
    form = ScheduleForm(api_data(ScheduleForm, data))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    return form.preview()


def _json_error(exc: BadRequest) -> JsonResponse:
    messages = [f"{field}: {e['message']}" if field != "__all__" else e["message"]
                for field, errors in exc.errors.items() for e in errors]
    return JsonResponse({"error": " ".join(messages), "errors": exc.errors}, status=400)


@login_required
@require_POST
def lr_preview(request: HttpRequest) -> JsonResponse:
    try:
        return JsonResponse(_preview(json_body(request)))
    except BadRequest as exc:
        return _json_error(exc)


@api("POST")
def api_lr_preview(request: HttpRequest) -> JsonResponse:
    return JsonResponse(_preview(json_body(request)))


@login_required
@require_GET
def customize(request: HttpRequest) -> JsonResponse:
    name = request.GET.get("name", "")
    known = catalog.networks()
    if name not in known:
        return JsonResponse({"error": f"Unknown standard network {name!r}; known: {', '.join(known)}."}, status=400)
    return JsonResponse(catalog.customize(name))


def _checked_network(network: Any, user: Any) -> dict[str, Any]:
    """The network spec of a Visualize request, refused (ValueError with the
    message) when it is malformed or is code the user may not run."""
    if not isinstance(network, dict):
        raise ValueError("Give the network as an object with its source.")
    source = network.get("source")
    if source == "standard":
        if network.get("name") not in catalog.networks():
            raise ValueError(f"Unknown standard network {network.get('name')!r}.")
    elif source == "layers":
        try:
            validate_layers(str(network.get("text") or ""))
        except NetworkError as exc:
            raise ValueError(str(exc)) from None
    elif source == "python":
        if not user.has_perm(RUN_CODE):
            raise ValueError("Only users allowed to run code may build a network written in Python.")
        if not isinstance(network.get("text"), str):
            raise ValueError("Give the Python code as text.")
    else:
        raise ValueError("The network's source is standard, layers or python.")
    return network


@login_required
@require_POST
def visualize(request: HttpRequest) -> JsonResponse:
    """Build the network for the chosen dataset's images (after the crop) and
    return its layer table, or why it does not build."""
    try:
        body = json_body(request)
    except BadRequest as exc:
        return _json_error(exc)
    try:
        dataset, info = built_dataset(body.get("dataset"))
    except ValidationError as exc:
        return JsonResponse({"error": "Choose a dataset first: " + " ".join(exc.messages)}, status=400)
    try:
        network = _checked_network(body.get("network"), request.user)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    height, width, channels = info["image_shape"]
    crop = body.get("crop")
    if crop is not None:
        if not isinstance(crop, int) or isinstance(crop, bool) or not 0 < crop <= min(height, width):
            return JsonResponse({"error": f"The crop must be a whole number that fits in the dataset's {width}×{height} "
                                          "images."}, status=400)
        height = width = crop
    classes = len(info["classes"])
    answer = catalog.inspect(network, channels, classes, height, width)
    if not answer.get("ok"):
        return JsonResponse({"error": answer.get("error") or "The network does not build."}, status=400)
    return JsonResponse({"summary": answer["summary"], "input": [channels, height, width], "classes": classes,
                         "dataset": dataset.pk})


@api("POST")
def api_models(request: HttpRequest) -> JsonResponse:
    form = NewModelForm(api_data(NewModelForm, json_body(request)), user=request.user)
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    return JsonResponse({"jobs": [serialize.job_detail(job) for job in form.submit(request.user)]}, status=201)


urlpatterns = [
    path("models/new/", new_model, name="new-model"),
    path("models/lr-preview", lr_preview, name="model-lr-preview"),
    path("models/customize", customize, name="model-customize"),
    path("models/visualize", visualize, name="model-visualize"),
]

api_urlpatterns = [
    path("models", api_models, name="api-models"),
    path("lr-preview", api_lr_preview, name="api-lr-preview"),
]
