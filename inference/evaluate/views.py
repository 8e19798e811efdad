"""The evaluation pages: New evaluation, the Evaluate button of a model's
page, Compare on a group page, the report section of the job page and the
files it serves (each row's image, the JSON and CSV downloads)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from datasets import services as dataset_services
from jobs.models import Job
from trainer.evaluation_files import CSV, REPORT, RESULTS
from trainer.tasks import TASKS, task_of
from trainer.tasks.uses import EVALUATE
from training.modeljobs import models, models_offering
from web.files import streamed_asynchronously

from .. import trained
from . import results, services
from .forms import EvaluationForm, SplitForm

DOWNLOADS = {"json": (RESULTS, "application/json"), "csv": (CSV, "text/csv"), "report": (REPORT, "application/json")}


def evaluation_or_404(job_id: int) -> Job:
    return get_object_or_404(Job, pk=job_id, kind=services.KIND)


@login_required
def new_evaluation(request: HttpRequest) -> HttpResponse:
    initial = {"model": request.GET.get("model"), "source": "list"}
    form = EvaluationForm(request.POST or None, request.FILES or None, initial=initial)
    choices = list(models_offering(EVALUATE).order_by("-created_at"))
    form.fields["model"].widget = forms.Select(choices=[("", "Choose a model")] + [
        (model.pk, f"#{model.pk} {model.name}") for model in choices])
    if request.method == "POST" and form.is_valid():
        try:
            return redirect("job", form.submit(request.user).pk)
        except trained.Unusable as exc:  # the model changed since the form looked
            form.add_error(exc.field, str(exc))
    return render(request, "inference/new.html", {"form": form, "model_tasks": model_tasks(choices)})


def model_tasks(choices: list[Job]) -> dict[int, dict[str, Any]]:
    """What the New evaluation page's script shows for each model it lists,
    from its task's registration: the sources and options it takes and how
    its folders and archives give their labels."""
    shown = {}
    for model in choices:
        task = task_of(model.params)
        shown[model.pk] = {"sources": list(task.evaluation_sources), "options": list(task.evaluation_options),
                           "labelled_files": task.labelled_files}
    return shown


@login_required
@require_POST
def evaluate(request: HttpRequest, model_id: int) -> HttpResponse:
    model = trained.model_or_404(model_id)
    form = SplitForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            messages.error(request, " ".join(errors))
        return redirect("job", model.pk)
    try:
        job = services.evaluate(request.user, model, form.cleaned_data["split"], form.cleaned_data["snapshot"],
                                form.cleaned_data["score_threshold"])
    except trained.Unusable as exc:
        messages.error(request, str(exc))
        return redirect("job", model.pk)
    if note := job.params.get("note"):
        messages.info(request, note)
    return redirect("job", job.pk)


@login_required
@require_POST
def compare(request: HttpRequest, owner: str, group: str) -> HttpResponse:
    form = SplitForm(request.POST)
    back = redirect(reverse("group", args=[owner, group]) + "#compare")
    if not form.is_valid():
        for errors in form.errors.values():
            messages.error(request, " ".join(errors))
        return back
    split = form.cleaned_data["split"]
    try:
        queued, skipped = services.compare(request.user, owner, group, split, form.cleaned_data["score_threshold"])
    except trained.Unusable as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Evaluating {len(queued)} model(s) on the {services.SPLITS[split]} split.")
        for reason in skipped:
            messages.warning(request, f"Left out {reason}")
    return back


@login_required
def image(request: HttpRequest, job_id: int, index: int) -> HttpResponse:
    found = results.image(evaluation_or_404(job_id), index)
    if found is None:
        raise Http404("No such image.")
    response = HttpResponse(found, content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response


@login_required
def download(request: HttpRequest, job_id: int, what: str) -> FileResponse:
    job = evaluation_or_404(job_id)
    if what not in DOWNLOADS:
        raise Http404("No such file.")
    name, content_type = DOWNLOADS[what]
    path = results.folder(job) / name
    if not path.is_file():
        raise Http404("The evaluation has no results yet.")
    return streamed_asynchronously(request, FileResponse(open(path, "rb"), content_type=content_type,
                                                         as_attachment=True, filename=f"evaluation-{job.pk}-{name}"))


def page_context(job: Job) -> dict[str, Any]:
    """What the job page shows of an evaluation (``JobKind.page_context``)."""
    model = models().filter(pk=job.params.get("model")).first()
    return {"evaluation": {
        "job": job.pk,
        "done": results.report(job) is not None,
        "model": {"id": model.pk, "name": model.name, "url": reverse("job", args=[model.pk])} if model else None,
        "source": job.params.get("source", {}).get("type"),
        "split": job.params.get("source", {}).get("split"),
        "note": job.params.get("note") or "",
        "report_api": reverse("api-evaluation-report", args=[job.pk]),
        "rows_api": reverse("api-evaluation-rows", args=[job.pk]),
        "downloads": {what: reverse("evaluation-download", args=[job.pk, what]) for what in DOWNLOADS},
        # Row n's image is at this address with its "0" replaced by n.
        "image_url": reverse("evaluation-image", args=[job.pk, 0]),
        # The colours a report of masks draws its classes in: the dataset's.
        "colours": class_colours(model),
    }}


def class_colours(model: Job | None) -> list[str]:
    """The classes' colours of the model's dataset; none when the model or its dataset is gone."""
    if model is None:
        return []
    try:
        return dataset_services.class_colours(trained.manifest(model))
    except trained.Unusable:
        return []


# What the job lists show of a finished evaluation: each task's first two metrics.
LISTED = tuple(dict.fromkeys(metric.field for task in TASKS.values() for metric in task.metrics[:2]))


def summary_extra(job: Job) -> dict[str, Any]:
    """A finished evaluation's accuracies, mAP or mIoU in the job lists (``JobKind.summary_extra``)."""
    found = results.summary(job)
    return {key: found[key] for key in LISTED if key in found}
