"""The device check's pages: its form, and its section of the job page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from jobs.models import Job
from trainer import eventkinds, eventlog

from .forms import DeviceCheckForm


@login_required
def new_device_check(request: HttpRequest) -> HttpResponse:
    form = DeviceCheckForm(request.POST or None, initial={"name": "Device check"})
    if request.method == "POST" and form.is_valid():
        job = form.submit(request.user)
        return redirect("job", job.pk)
    return render(request, "devicechecks/new.html", {"form": form})


def page_context(job: Job) -> dict[str, Any]:
    """What the job page shows of a device check (``JobKind.page_context``):
    the rate it measured, once it has."""
    results = [e["data"] for e in eventlog.read_all(job.folder) if e["kind"] == eventkinds.RESULT]
    return {"check_result": results[-1] if results else None}
