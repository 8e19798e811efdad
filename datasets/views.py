"""Pages of datasets: the "New dataset" form with its resize preview, the
dataset section of the job page, and the gallery. The JSON API is ``api``."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseNotFound, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from jobs import services as job_services
from jobs import uploadfiles
from jobs.models import Job
from trainer import jobfiles
from trainer.datastore import png_bytes
from trainer.imageio import ImageError, load_image, resize
from trainer.tasks import DEFAULT, task_of
from web.api import error
from web.files import streamed_asynchronously, streamed_from_writer
from web.serverfolders import OutsideRoots, allowed, first_image

from . import sample, services, taskpages
from .datasetsettings import applied, public_params
from .forms import BuildForm, DatasetForm

PAGE_SIZES = (25, 50, 100, 200)
SKIPPED_SHOWN = 500


@login_required
def new_dataset(request: HttpRequest) -> HttpResponse:
    """The New dataset page of the task ``?task=`` (or the posted ``task``) names."""
    wants_json = request.headers.get("Accept") == "application/json"
    if request.method == "POST" and (refused := uploadfiles.refusal(request)):  # before the body is read
        return refused
    try:
        task = taskpages.task_named((request.POST if request.method == "POST" else request.GET).get("task"))
    except taskpages.UnknownTask as exc:
        if wants_json:
            return error(str(exc), 400, errors={"task": [{"message": str(exc), "code": "unknown_task"}]})
        return _new_page(request, DatasetForm(), DEFAULT, status=400, task_error=str(exc))
    form_class = taskpages.pages(task).form
    if request.method == "POST":
        form = form_class(request.POST, request.FILES)
        if refused := uploadfiles.refusal(request):  # the handler stopped the upload while the form read it
            return refused
        if form.is_valid():
            job = form.submit(request.user)
            url = reverse("job", args=[job.pk])
            return JsonResponse({"url": url, "id": job.pk}, status=201) if wants_json else redirect(url)
        if wants_json:
            return error("The form has errors.", 400, errors=form.errors.get_json_data())
        return _new_page(request, form, task.name, status=400)
    return _new_page(request, form_class(), task.name)


def _new_page(request: HttpRequest, form: BuildForm, task: str, status: int = 200, task_error: str = "") -> HttpResponse:
    context = {"form": form, "upload_max": settings.UPLOAD_MAX_BYTES, "tasks": taskpages.tabs(), "chosen_task": task,
               "task_error": task_error}
    return render(request, "datasets/new.html", context, status=status)


def early_refusal(fields: QueryDict, wants_json: bool) -> JsonResponse | None:
    """The page's answer to an upload whose fields sent before the file have
    errors (``web/fieldsfirst.py``); a form posted without the page's
    script gets the whole form's answer instead."""
    errors = taskpages.sent_field_errors(fields) if wants_json else {}
    return error("The form has errors.", 400, errors=errors) if errors else None


PREVIEW_MAX_BYTES = 8 * 2**20


@login_required
@require_POST
def preview(request: HttpRequest) -> HttpResponse:
    """The chosen resize applied to one of the user's images: an uploaded one,
    or the first file of a server folder."""
    try:
        width, height = int(request.POST.get("width", 256)), int(request.POST.get("height", 256))
        if not (1 <= width <= 4096 and 1 <= height <= 4096):
            raise ValueError
    except ValueError:
        return error("Width and height must be whole numbers from 1 to 4096.", 400)
    mode = request.POST.get("resize_mode", "squash")
    channels = 1 if request.POST.get("image_type") == "grayscale" else 3
    try:
        if "image" in request.FILES:
            upload = request.FILES["image"]
            if upload.size > PREVIEW_MAX_BYTES:
                return error(f"The preview takes images up to {PREVIEW_MAX_BYTES // 2**20} MiB; choose a smaller one.", 400)
            # Decoded from the file it was spooled to; a small one is in memory already.
            source = upload.temporary_file_path() if hasattr(upload, "temporary_file_path") else upload.read()
        elif not request.POST.get("folder"):
            return error("Choose an image, or a training folder first.", 400)
        else:
            source = first_image(allowed(request.POST["folder"]))
            if source is None:
                return error("That folder holds no image to preview.", 400)
        pixels = resize(load_image(source, channels, draft=(width, height), resize_mode=mode), width, height, mode,
                        np.random.default_rng(0))
    except (OutsideRoots, ImageError) as exc:
        return error(str(exc), 400)
    except ValueError as exc:
        return error(str(exc), 400)
    return HttpResponse(png_bytes(pixels), content_type="image/png")


def page_context(job: Job) -> dict[str, Any]:
    """What the job page shows of a dataset (``JobKind.page_context``)."""
    info = services.manifest(job)
    context: dict[str, Any] = {"dataset": info, "models_using": services.models_using(job),
                               "dataset_resumable": job_services.resumable(job)}
    if info:
        report = services.skipped(job)
        context.update({
            "disk_size": services.disk_size(job),
            "skipped_files": report[:SKIPPED_SHOWN],
            "skipped_more": max(0, len(report) - SKIPPED_SHOWN),
            "counts": {s: info["splits"][s]["count"] for s in services.SPLITS},
            "chart": chart_data(info),
            "option_rows": option_rows(applied(public_params(info["options"]))),
        })
        pages = taskpages.pages(task_of(info))
        if pages.section_context:
            context.update(pages.section_context(job, info), task_section=pages.section)
        context["exports_coco"] = pages.coco_export is not None
    return context


def chart_data(info: dict[str, Any]) -> dict[str, Any]:
    """Images per class stacked by split, and the skipped files per class."""
    classes = info["classes"]
    series = [{"name": split, "y": info["splits"][split]["per_class"]} for split in services.SPLITS
              if info["splits"][split]["count"]]
    skipped = [sum(info["skipped"]["per_class"].get(c, {}).values()) for c in classes]
    if any(skipped):
        series.append({"name": "skipped", "y": skipped})
    return {"classes": classes, "series": series}


def option_rows(options: dict[str, Any]) -> list[tuple[str, Any]]:
    source = options["source"]
    rows = [("Source", source["type"])]
    rows += [(f"Source {k}", v) for k, v in source.items() if k != "type" and v not in ("", None)]
    labels = {"channels": "Channels", "width": "Width", "height": "Height", "resize_mode": "Resize mode",
              "val_percent": "% for validation", "test_percent": "% for testing", "min_per_class": "Minimum per class",
              "max_per_class": "Maximum per class", "encoding": "Encoding", "quality": "JPEG quality", "seed": "Seed",
              "mean": "Mean image", "label_format": "Label format"}
    return rows + [(label, options.get(key)) for key, label in labels.items() if options.get(key) not in ("", None)]


@login_required
def mean_image(request: HttpRequest, job_id: int) -> FileResponse:
    path = services.folder(services.job_or_404(job_id)) / jobfiles.MEAN_IMAGE
    if not path.exists():
        raise Http404("This dataset has no mean image.")
    return streamed_asynchronously(request, FileResponse(open(path, "rb"), content_type="image/png"))


@login_required
def skipped_report(request: HttpRequest, job_id: int) -> JsonResponse:
    return JsonResponse(services.skipped(services.job_or_404(job_id)), safe=False, json_dumps_params={"ensure_ascii": False})


@login_required
def coco_zip(request: HttpRequest, job_id: int) -> HttpResponse:
    """The built dataset as a COCO zip, written while it is sent; a 404 that
    says why for a dataset not built or of a task that does not export."""
    job = services.job_or_404(job_id)
    info = services.manifest(job)
    if info is None:
        return _not_found("This dataset is not built yet: it downloads as COCO once its build is done.")
    task = task_of(info)
    export = taskpages.pages(task).coco_export
    if export is None:
        return _not_found(f"Only {' or '.join(t.label.lower() for t in taskpages.coco_tasks())} datasets download "
                          f"as COCO; this one is {task.label.lower()}.")
    return streamed_from_writer(request, partial(export, services.folder(job)), "application/zip",
                                f"{slugify(job.name) or 'dataset'}-coco.zip")


def _not_found(message: str) -> HttpResponse:
    return HttpResponseNotFound(message, content_type="text/plain; charset=utf-8")


@login_required
def explore(request: HttpRequest, job_id: int) -> HttpResponse:
    job = services.job_or_404(job_id)
    info = services.manifest(job)
    if info is None:
        return redirect("job", job.pk)
    splits = [s for s in services.SPLITS if info["splits"][s]["count"]]
    split = request.GET.get("split") if request.GET.get("split") in splits else splits[0]
    size = int(request.GET["size"]) if request.GET.get("size", "").isdigit() and int(request.GET["size"]) in PAGE_SIZES else 50
    reader = services.reader(job, split, info)
    chosen = request.GET.get("class", "")
    targets = task_of(info).targets
    indices = np.arange(len(reader)) if not chosen.isdigit() else targets.images_of_class(reader.targets, int(chosen))
    pages = max(1, math.ceil(len(indices) / size))
    page = min(max(1, int(request.GET["page"]) if request.GET.get("page", "").isdigit() else 1), pages)
    shown = indices[(page - 1) * size: page * size]
    items = [{"index": int(i), "label": ", ".join(info["classes"][c] for c in targets.classes_of(reader.targets, int(i)))}
             for i in shown]
    overlay = taskpages.pages(task_of(info)).overlay
    drawn = services.drawn_targets(info, reader, shown) if overlay == "boxes" else None
    masks = services.drawn_masks(job, info, split, taskpages.pages(task_of(info)).outlined) if overlay == "masks" \
        else None
    return render(request, "datasets/explore.html", {
        "job": job, "info": info, "split": split, "splits": splits, "size": size, "sizes": PAGE_SIZES,
        "chosen": chosen, "page": page, "pages": pages, "items": items, "total": len(indices), "drawn": drawn,
        "masks": masks,
    })


@login_required
def image(request: HttpRequest, job_id: int, split: str, index: int) -> HttpResponse:
    job = services.job_or_404(job_id)
    info = services.manifest(job)
    if info is None or split not in services.SPLITS:
        raise Http404("No such image.")
    reader = services.reader(job, split, info)
    if index >= len(reader):
        raise Http404("No such image.")
    response = HttpResponse(png_bytes(reader.image(index)), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response


@login_required
def mask(request: HttpRequest, job_id: int, split: str, index: int) -> HttpResponse:
    """An image's mask as a grayscale PNG of class indices (255: ignored),
    which the gallery colours, or as its target format draws it (an RGB PNG
    of classes and object numbers, ``TaskPages.outlined``); a 404 for a
    dataset whose gallery draws none."""
    job = services.job_or_404(job_id)
    info = services.manifest(job)
    if info is None or split not in services.SPLITS or taskpages.pages(task_of(info)).overlay != "masks":
        raise Http404("No such mask.")
    reader = services.reader(job, split, info)
    if index >= len(reader):
        raise Http404("No such mask.")
    drawn = task_of(info).targets.mask(reader.targets, index)
    response = HttpResponse(png_bytes(drawn if drawn.ndim == 3 else drawn[:, :, None]), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response


@login_required
@require_POST
def make_sample(request: HttpRequest) -> HttpResponse:
    job = sample.submit(request.user)
    return redirect("job", job.pk)
