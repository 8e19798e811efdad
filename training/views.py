"""The pages of model training and the small JSON answers they ask for: the
New model page (its learning rate preview, Customize and Visualize), the
training section of a model's job page with the files its run wrote, and
the group page. The JSON API is in ``api``."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.forms import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from jobs import services as job_services
from jobs.models import Job
from jobs.views import _act
from trainer import jobfiles, lr_policy
from trainer.tasks import task_of
from trainer.tasks.base import RUN_OPTIONS
from web.api import ActionError, BadRequest, bad_request_message, error, json_body
from web.files import streamed_asynchronously

from . import compare, networkinfo, presets, searches, series, services, taskoptions
from .forms import NewModelForm, ScheduleForm
from .forms.search import AUGMENTATION_CHOICES, MoreTrialsForm
from .forms.taskfit import problems
from .jsondata import api_data
from .models import Search

# Images are shown in the page; everything else is a download.
INLINE_TYPES = ("image/png",)
MODEL_SUFFIXES = (".pt", ".pth", ".pt2", ".safetensors", ".onnx")


# ---- the New model page --------------------------------------------------------------

def _page_data(form: NewModelForm) -> dict[str, Any]:
    """What the page's script needs: which fields each policy and solver uses,
    the standard networks, the presets, the earlier and pretrained models to start
    from, the snapshot file names and the URLs it asks."""
    return {
        "policies": {name: params for name, _label, params in lr_policy.POLICIES},
        "policy_defaults": lr_policy.DEFAULTS,
        "presets": presets.PRESETS,
        "momentum": [name for name, solver in networkinfo.solvers().items() if solver["momentum"]],
        "networks": networkinfo.networks(),
        "customizable": networkinfo.customizable(),
        "tasks": taskoptions.page_tasks(),
        # Every run option only some tasks' models take: hidden unless the chosen dataset's task takes it.
        "run_options": list(RUN_OPTIONS),
        "dataset_tasks": form.dataset_tasks,
        # What a field a task refuses is set back to when the page hides it.
        "initials": {name: form.fields[name].initial for task in taskoptions.TASKS.values()
                     for name in task.hidden_options},
        # The search's augmentation choices, each by the option it draws: hidden where the task refuses that.
        "search_choices": {name: field for name, (field, *_rest) in AUGMENTATION_CHOICES.items()},
        "previous": form.previous,
        "pretrained": [{"id": p["id"], "label": p["label"], "network": p["network"]} for p in form.pretrained_models],
        "may_run_code": form.may_run_code,
        "files": jobfiles.page_names(),
        "urls": {"customize": reverse("model-customize"), "visualize": reverse("model-visualize"),
                 "lr_preview": reverse("model-lr-preview")},
    }


@login_required
def new_model(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = NewModelForm(request.POST, user=request.user)
        if form.is_valid() and form.cleaned_data["search"]:
            return redirect("search", form.submit_search(request.user).pk)
        if form.is_valid():
            jobs = form.submit(request.user)
            if warning := form.few_steps_warning():
                messages.warning(request, warning)
            if len(jobs) == 1:
                return redirect("job", jobs[0].pk)
            return redirect(reverse("group", args=[request.user.username, jobs[0].group]))
    else:
        initial = {key: request.GET[key] for key in ("dataset", "pretrained_model") if request.GET.get(key, "").isdigit()}
        if "pretrained_model" in initial:
            initial["network_source"] = "pretrained"
        form = NewModelForm(initial=initial, user=request.user)
    context = {"form": form, "page_data": _page_data(form)}
    return render(request, "training/new.html", context, status=400 if request.method == "POST" else 200)


def preview(data: dict[str, Any]) -> dict[str, Any]:
    """The learning rate preview of a JSON body (BadRequest when its fields are not valid)."""
    form = ScheduleForm(api_data(ScheduleForm, data))
    if not form.is_valid():
        raise BadRequest(form.errors.get_json_data())
    return form.preview()


def _json_error(exc: BadRequest) -> JsonResponse:
    return error(bad_request_message(exc.errors), 400, errors=exc.errors)


@login_required
@require_POST
def lr_preview(request: HttpRequest) -> JsonResponse:
    try:
        return JsonResponse(preview(json_body(request)))
    except BadRequest as exc:
        return _json_error(exc)


@login_required
@require_GET
def customize(request: HttpRequest) -> JsonResponse:
    name = request.GET.get("name", "")
    known = networkinfo.customizable()
    if name not in known:
        return error(f"{name!r} is not a standard network that can be customized; those are: {', '.join(known)}.", 400)
    try:
        return JsonResponse(networkinfo.customize(name))
    except networkinfo.Busy as exc:
        return error(str(exc), 429)


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
        dataset, info = services.built_dataset(body.get("dataset"))
    except ValidationError as exc:
        return error("Choose a dataset first: " + " ".join(exc.messages), 400)
    try:
        network = services.checked_network(body.get("network"), request.user)
    except ValueError as exc:
        return error(str(exc), 400)
    task = task_of(info)
    chosen = {"network_source": network.get("source"), "standard_network": network.get("name"), "crop": body.get("crop")}
    if refused := problems(task, chosen):
        return error(" ".join(refused.values()), 400)
    height, width, channels = info["image_shape"]
    crop = body.get("crop")
    if crop is not None:
        if not isinstance(crop, int) or isinstance(crop, bool) or not 0 < crop <= min(height, width):
            return error(f"The crop must be a whole number that fits in the dataset's {width}×{height} "
                                          "images.", 400)
        height = width = crop
    classes = len(info["classes"])
    answer = networkinfo.inspect(network, task.name, channels, classes, height, width)
    if not answer.get("ok"):
        return error(answer.get("error") or "The network does not build.", 429 if answer.get("busy") else 400)
    return JsonResponse({"summary": answer["summary"], "input": [channels, height, width], "classes": classes,
                         "dataset": dataset.pk})


# ---- the training section of a model's job page ------------------------------------

def page_context(job: Job) -> dict[str, Any]:
    """What the job page adds for a training job (``JobKind.page_context``)."""
    task = task_of(job.params)

    def build(run: series.Run) -> dict[str, Any]:
        return {
            "through": run.seq,  # the page ignores live events it already holds
            "series": run.all_points(task, series.DEFAULT_POINTS),
            "snapshots": run.snapshot_list(),
            "best": run.best,
            "result": run.result,
            "network": run.network,
            "layers": run.layers,
            "perf": run.perf,
            "profile": run.profile,
            "hardware": run.hardware,
        }

    data = series.view(job.folder, build)
    classes = services.dataset_classes(job.params.get("dataset"))
    for snapshot in data["snapshots"]:
        snapshot["exists"] = services.servable(job, snapshot.get("file"))
    data.update({
        "job": job.pk,
        "status": job.status,
        "epochs": job.params.get("epochs"),
        "classes": classes,
        "metrics": task.shown_metrics(classes),
        "files_url": reverse("job-file", args=[job.pk, "_"])[:-1],
        "profile_api": reverse("api-job-profile", args=[job.pk]),
        "job_api": reverse("api-job", args=[job.pk]),
        "profile_requested": (job.folder / jobfiles.PROFILE_REQUEST).exists(),
        "exported_model": jobfiles.EXPORTED_MODEL,
        **task.page_vocabulary(),
    })
    return {
        "training": data,
        "training_model_file": services.model_file(job, data["best"], data["snapshots"]),
        "training_export": jobfiles.EXPORTED_MODEL if services.servable(job, jobfiles.EXPORTED_MODEL) else None,
        "training_resumable": job_services.resumable(job),
    }


@login_required
def job_file(request: HttpRequest, job_id: int, relative: str) -> FileResponse:
    job = get_object_or_404(Job, pk=job_id)
    target = services.served_path(job, relative)
    if target is None:
        raise Http404("No such file.")
    content_type = file_type(target)
    attachment = content_type not in INLINE_TYPES
    return streamed_asynchronously(request, FileResponse(
        open(target, "rb"), content_type=content_type, as_attachment=attachment,
        filename=f"{slugify(job.name) or f'job-{job.pk}'}-{target.name}" if attachment else target.name))


def file_type(path: Path) -> str:
    """What a browser should take the file for: model files (which the
    system's MIME table does not know, or takes for something else) are plain bytes."""
    if path.suffix in MODEL_SUFFIXES:
        return "application/octet-stream"
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


@login_required
@require_POST
def profile(request: HttpRequest, job_id: int) -> HttpResponse:
    return _act(request, job_id, services.request_profile, "Profile requested: the next few steps are profiled.")


# ---- the group page ------------------------------------------------------------------

@login_required
def search_page(request: HttpRequest, search_id: int) -> HttpResponse:
    search = get_object_or_404(Search.objects.select_related("owner"), pk=search_id)
    return render(request, "training/search.html", {"search": search, "data": searches.search_data(search),
                                                    "more_form": MoreTrialsForm()})


@login_required
@require_POST
def search_more(request: HttpRequest, search_id: int) -> HttpResponse:
    """Continue a search with more trials (its page's form)."""
    search = get_object_or_404(Search, pk=search_id)
    form = MoreTrialsForm(request.POST)
    try:
        if not form.is_valid():
            raise ActionError(f"Not continued: {bad_request_message(form.errors.get_json_data())}", status=400)
        searches.add_trials(search, request.user, form.cleaned_data["trials"])
    except ActionError as exc:
        messages.error(request, exc.message)
        return redirect("search", search.pk)
    messages.success(request, f"“{search.name}” continues with {form.cleaned_data['trials']} more trial(s).")
    return redirect("search", search.pk)


@login_required
def compare_page(request: HttpRequest) -> HttpResponse:
    """Models side by side; the address holds the selection, so it can be shared."""
    try:
        data = compare.compare_data(compare.Selection.from_query(request.GET.dict()), first_curves_only=True)
    except compare.SelectionError as exc:
        return render(request, "training/compare.html", {"problem": str(exc)}, status=400)
    return render(request, "training/compare.html", {"data": data})


@login_required
def group_page(request: HttpRequest, owner: str, group: str) -> HttpResponse:
    return render(request, "training/group.html",
                  {"owner": owner, "group": group, "data": services.group_data(owner, group)})
