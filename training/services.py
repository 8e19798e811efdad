"""The queries and actions of model training that pages and the API share:
the datasets, earlier models and pretrained models a new model may start from, the run files
anyone signed in may download, profiling requests, and a group's runs side
by side."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from django import forms
from django.http import Http404
from django.urls import reverse

from datasets import services as dataset_services
from jobs import serialize, services
from jobs.models import ACTIVE, Job, Status
from trainer import jobfiles
from trainer.networks.layerspec import NetworkError, validate_layers
from trainer.tasks import Metric, Task, UnknownTask, task_of
from trainer.tasks.uses import PRETRAINED
from web.api import ActionError

from . import modeljobs, networkinfo, series

RUN_CODE = "training.run_code"
PRETRAINED_KIND = "pretrained"  # the pretrained app's jobs: weights a new model may be fine-tuned from
PREVIOUS_JOBS_SHOWN = 200
GROUP_POINTS = 500  # per curve: a group overlays many runs


def runs_code(params: dict[str, Any]) -> str | None:
    """The permission a model of these params needs (``JobKind.required_permission``):
    a network written in Python runs as code with the server account's rights."""
    return RUN_CODE if (params.get("network") or {}).get("source") == "python" else None


# ---- what a new model starts from --------------------------------------------------

def previous_jobs() -> list[dict[str, Any]]:
    """Finished or aborted models that left snapshots and whose task offers
    starting a new model from their weights, newest first."""
    found = []
    for job in modeljobs.models_offering(PRETRAINED).filter(status__in=[Status.DONE, Status.ABORTED])[:PREVIOUS_JOBS_SHOWN]:
        files = jobfiles.snapshots(job.folder)
        if files and isinstance(job.params.get("network"), dict):
            found.append({"id": job.pk, "label": f"{job.name} #{job.pk} ({job.get_status_display().lower()})",
                          "snapshots": files, "network": job.params["network"]})
    return found


def pretrained_info(job: Job) -> dict[str, Any] | None:
    """What a done pretrained model holds (network, classes, channels, input
    size, parameters), from its ``info.json``; None before it is made."""
    if job.status != Status.DONE:
        return None
    try:
        return json.loads((job.folder / jobfiles.PRETRAINED_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def pretrained_models() -> list[dict[str, Any]]:
    """Done pretrained models, newest first: each with its network and the
    weights file a training job's ``pretrained`` option reads."""
    found = []
    for job in Job.objects.filter(kind=PRETRAINED_KIND, status=Status.DONE)[:PREVIOUS_JOBS_SHOWN]:
        info = pretrained_info(job)
        if info and isinstance(info.get("network"), dict):
            network = info["network"].get("name") or info["network"].get("source")
            found.append({"id": job.pk, "label": f"Pretrained model: {job.name} #{job.pk} ({network}, "
                                                 f"{len(info['classes'])} classes)",
                          "network": info["network"], "path": str(job.folder / jobfiles.PRETRAINED_WEIGHTS)})
    return found


def dataset_label(job: Job, info: dict[str, Any]) -> str:
    height, width, channels = info["image_shape"]
    colour = "grayscale" if channels == 1 else "colour"
    return f"{job.name} #{job.pk} · {width}×{height} {colour} · {len(info['classes'])} classes"


def trainable_datasets() -> list[tuple[str, str, str]]:
    """(id, label, task name) of every built dataset whose task trains."""
    found = []
    for job in Job.objects.filter(kind="dataset", status=Status.DONE):
        info = dataset_services.manifest(job)
        if info and (task := task_of(info)).trains:
            found.append((str(job.pk), dataset_label(job, info), task.name))
    return found


def built_dataset(value: Any) -> tuple[Job, dict[str, Any]]:
    """The dataset job ``value`` names with its manifest; ValidationError when
    there is none or its build is not done."""
    job = Job.objects.filter(pk=value, kind="dataset").first()
    if job is None:
        raise forms.ValidationError(f"There is no dataset #{value}.")
    if job.status != Status.DONE:
        raise forms.ValidationError(f"The dataset “{job.name}” (#{job.pk}) is {job.get_status_display().lower()}; "
                                    "choose a dataset whose build is done.")
    info = dataset_services.manifest(job)
    if info is None:
        raise forms.ValidationError(f"The dataset “{job.name}” (#{job.pk}) has no built images in its folder.")
    task = task_of(info)
    if not task.trains:
        raise forms.ValidationError(f"The dataset “{job.name}” (#{job.pk}) is for {task.label.lower()}, and no network "
                                    "of this app trains for it yet.")
    return job, info


def dataset_classes(dataset_id: Any) -> int | None:
    """How many classes the dataset job ``dataset_id`` has, when it is built."""
    job = Job.objects.filter(pk=dataset_id, kind="dataset").first()
    info = dataset_services.manifest(job) if job else None
    return len(info["classes"]) if info else None


def checked_network(network: Any, user: Any) -> dict[str, Any]:
    """The network spec of a Visualize request, refused (ValueError with the
    message) when it is malformed or is code the user may not run."""
    if not isinstance(network, dict):
        raise ValueError("Give the network as an object with its source.")
    source = network.get("source")
    if source == "standard":
        if network.get("name") not in networkinfo.networks():
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


# ---- the files a run writes ----------------------------------------------------------

def served_path(job: Job, relative: str) -> Path | None:
    """The file ``relative`` names inside one of the job's served folders,
    or None: paths are resolved (links followed) before the check, so
    ``..`` and links cannot lead out."""
    root = job.folder.resolve()
    try:
        target = (root / relative).resolve()
        parts = target.relative_to(root).parts
    except (ValueError, OSError):
        return None
    if len(parts) < 2 or parts[0] not in jobfiles.SERVED_FOLDERS or not target.is_file():
        return None
    return target


def servable(job: Job, relative: Any) -> bool:
    return isinstance(relative, str) and served_path(job, relative) is not None


def model_file(job: Job, best: dict[str, Any] | None, snapshots: list[dict[str, Any]]) -> str | None:
    """The file "Download model" gives: the best snapshot, else the last one."""
    candidates = [best.get("file")] if best else []
    candidates += [s.get("file") for s in reversed(snapshots)]
    return next((f for f in candidates if servable(job, f)), None)


def request_profile(job: Job, user: Any) -> Job:
    """Ask the running trainer to profile a few steps: it watches for the
    file, profiles, deletes the file and reports a ``profile`` event."""
    services.require_change(job, user)
    if not modeljobs.is_model(job):
        raise ActionError("Only training jobs can be profiled.")
    job.refresh_from_db(fields=["status"])
    if job.status != Status.RUNNING:
        raise ActionError(
            f"The job is {job.get_status_display().lower()}; only a running training job can be profiled.")
    (job.folder / jobfiles.PROFILE_REQUEST).touch()
    return job


# ---- a group's runs ------------------------------------------------------------------

def _run_summary(run: series.Run, points: int, headline: Metric) -> dict[str, Any]:
    """A run's validation curves and bests: the loss and its task's headline
    metric (``best_<field>``, e.g. ``best_top1``)."""
    best = run.series[headline.series].extreme(highest=True)
    loss = run.series["val_loss"].extreme(highest=False)
    return {
        "curves": {"val_loss": run.points("val_loss", points), headline.series: run.points(headline.series, points)},
        f"best_{headline.field}": {"value": best[2], "epoch": best[1]} if best else None,
        "best_val_loss": {"value": loss[2], "epoch": loss[1]} if loss else None,
        "result": run.result,
    }


def _compared_task(models: list[Job]) -> Task:
    """The task a group's runs are compared on: its first model's that this
    server knows (a model of an unknown task is listed on another's metrics)."""
    for job in models:
        with contextlib.suppress(UnknownTask):
            return task_of(job.params)
    return task_of({})


def group_data(owner: str, group: str, points: int = GROUP_POINTS) -> dict[str, Any]:
    """The jobs of ``owner``'s group (each user's groups are their own), each
    training run with its settings, best metrics and validation curves;
    Http404 for a group without jobs."""
    jobs = list(Job.objects.filter(owner__username=owner, group=group).select_related("owner")
                .order_by("created_at", "id"))
    if not jobs:
        raise Http404(f"{owner} has no job in the group “{group}”.")
    models = [job for job in jobs if modeljobs.is_model(job)]
    task = _compared_task(models)
    headline = task.headline
    rows = []
    places = serialize.places_of(jobs)
    for job in jobs:
        row = serialize.job_summary(job, places)
        if modeljobs.is_model(job):
            params = job.params
            network = params.get("network") or {}
            row.update({
                "network": network.get("name") or network.get("source", ""),
                "solver": params.get("solver"), "lr": params.get("lr"), "batch_size": params.get("batch_size"),
                "epochs": params.get("epochs"),
                **series.view(job.folder, lambda run: _run_summary(run, points, headline)),
            })
        rows.append(row)
    return {
        "group": group,
        "owner": owner,
        "url": reverse("group", args=[owner, group]),
        "api": reverse("api-group", args=[owner, group]),
        "active": any(job.status in ACTIVE for job in jobs),
        "headline": headline.page_data(),
        "metrics": task.shown_metrics(None),
        "jobs": rows,
    }
