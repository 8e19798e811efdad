"""The group page: the jobs of one group side by side, the validation curves
of its training runs overlaid (a sweep's runs compared), with a table of
each run's settings and best metrics."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from digitslike.api import BadRequest, api
from jobs import serialize
from jobs.models import ACTIVE, Job

from . import series

GROUP_POINTS = 500  # per curve: a group overlays many runs


def _run_summary(run: series.Run, points: int) -> dict[str, Any]:
    top1 = run.series["val_top1"].extreme(highest=True)
    loss = run.series["val_loss"].extreme(highest=False)
    return {
        "curves": {"val_loss": run.points("val_loss", points), "val_top1": run.points("val_top1", points)},
        "best_top1": {"value": top1[2], "epoch": top1[1]} if top1 else None,
        "best_val_loss": {"value": loss[2], "epoch": loss[1]} if loss else None,
        "result": run.result,
    }


def group_data(group: str, points: int = GROUP_POINTS) -> dict[str, Any]:
    jobs = list(Job.objects.filter(group=group).select_related("owner").order_by("created_at", "id"))
    if not jobs:
        raise Http404("No job is in this group.")
    rows = []
    for job in jobs:
        row = serialize.job_summary(job)
        if job.kind == "train":
            params = job.params
            network = params.get("network") or {}
            row.update({
                "network": network.get("name") or network.get("source", ""),
                "solver": params.get("solver"), "lr": params.get("lr"), "batch_size": params.get("batch_size"),
                "epochs": params.get("epochs"),
                **series.view(job.folder, lambda run: _run_summary(run, points)),
            })
        rows.append(row)
    return {
        "group": group,
        "url": reverse("group", args=[group]),
        "api": reverse("api-group", args=[group]),
        "active": any(job.status in ACTIVE for job in jobs),
        "jobs": rows,
    }


@login_required
def group_page(request: HttpRequest, group: str) -> HttpResponse:
    return render(request, "training/group.html", {"group": group, "data": group_data(group)})


@api("GET")
def api_group(request: HttpRequest, group: str) -> JsonResponse:
    try:
        points = series.clamp_points(request.GET.get("points") or str(GROUP_POINTS))
    except ValueError as exc:
        raise BadRequest({"points": [str(exc)]}) from None
    return JsonResponse(group_data(group, points))
