"""Plain-dict views of jobs and workers, shared by the JSON API, the live
streams and the templates' data attributes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.urls import reverse

from . import groups, kinds, queueorder, services
from .models import PENDING, Job, JobNode, JobTransition


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def places_of(jobs: Iterable[Job]) -> dict[int, queueorder.Place]:
    """The places in the queue of the pending ones among ``jobs``, each class's order laid out once."""
    places = {}
    for device_class in {job.device_class for job in jobs if job.status in PENDING}:
        places.update({place.job.pk: place for place in queueorder.explained(device_class).places})
    return places


def job_summaries(jobs: Iterable[Job]) -> list[dict[str, Any]]:
    jobs = list(jobs)
    places = places_of(jobs)
    return [job_summary(job, places) for job in jobs]


def job_summary(job: Job, places: dict[int, queueorder.Place] | None = None) -> dict[str, Any]:
    """The fields every job has, then what its kind adds (``JobKind.sparkline``, ``summary_extra``).
    ``places``: the queue's places (``places_of``) of a list the job is in."""
    kind = kinds.find(job.kind)
    place = (places_of([job]) if places is None else places).get(job.pk)
    return {
        "id": job.pk,
        "kind": job.kind,
        "category": kind.category if kind else "",
        "name": job.name,
        "group": job.group,
        "owner": job.owner.username,
        "status": job.status,
        "status_label": job.get_status_display(),
        "progress": job.progress,
        "created_at": _iso(job.created_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
        "elapsed_seconds": job.elapsed_seconds(),
        # The pages add the current run's time to it as it goes (since ``started_at``).
        "ended_runs_seconds": job.ended_runs_seconds(),
        "eta_seconds": job.eta_seconds(),
        "priority": job.priority,
        "queue_position": place.position if place else None,
        "waiting_reason": place.reason if place else "",
        "url": reverse("job", args=[job.pk]),
        "group_url": groups.page_url(job.owner.username, job.group),
        **({"sparkline": kind.sparkline.values(job)} if kind and kind.sparkline else {}),
        **(kind.summary_extra(job) if kind and kind.summary_extra else {}),
    }


def transition(t: JobTransition) -> dict[str, Any]:
    """One entry of ``Job.history()``: Running ones carry their attempt's number."""
    return {"status": t.status, "at": _iso(t.at), "message": t.message, "attempt": t.attempt_number}


def node(n: JobNode) -> dict[str, Any]:
    """One of the other nodes of a job over several machines, in its latest attempt."""
    return {"rank": n.rank, "status": n.status, "host": n.held.get("host", ""), "devices": n.held.get("devices", []),
            "message": n.message}


def job_detail(job: Job) -> dict[str, Any]:
    return {
        **job_summary(job),
        "notes": job.notes,
        "params": kinds.public_params(job),
        "resources": job.resources,
        "held": job.held,
        "nodes": [node(n) for n in job.nodes.filter(attempt=job.attempt)],
        "worker": job.worker,
        "attempt": job.attempt,
        "abort_requested": job.abort_requested,
        "silent_since": job.silent_since.isoformat() if job.silent_since else None,
        "restart_requested": job.restart_requested,
        "error": job.error,
        "lost_dependencies": job.lost_dependency_notices(),
        "resumable": services.resumable(job),
        "history": [transition(t) for t in job.history()],
    }
