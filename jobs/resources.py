"""The resources snapshot: live workers, their devices, which job holds
which device, the queue of jobs waiting, in the order they get devices
(``queueorder``) and why each waits, and what each user holds and may hold. Read from the
database, where workers report every few seconds and running jobs record
the devices they hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis
from django.urls import reverse

from . import leases, queueorder
from .models import Job, JobNode, Status, Worker

# What names a lease holder that is not a job (``register_holder``).
HolderName = Callable[[str], dict[str, str] | None]
_other_holders: list[HolderName] = []


def _machines() -> dict[str, list[dict[str, Any]]]:
    """Devices per machine; two workers on one machine share its devices."""
    machines: dict[str, list[dict[str, Any]]] = {}
    for worker in Worker.alive().order_by("last_seen"):
        machines[worker.hostname] = worker.devices
    return machines


def _holders() -> dict[tuple[str, str], Job]:
    """The job holding each (host, device), whether by itself or by one of
    its other nodes when it runs over several machines."""
    holders = {}
    running = [(job, job.held) for job in Job.objects.filter(status=Status.RUNNING).select_related("owner")]
    running += [(node.job, node.held) for node in
                JobNode.objects.filter(status=Status.RUNNING).select_related("job__owner")]
    for job, held in running:
        for device in held.get("devices", []):
            holders[(held.get("host", ""), device)] = job
    return holders


def register_holder(name: HolderName) -> None:
    """Register what names a device's lease holder that is not a job (an
    app's server that leases a device as a job does), called from the app's
    ``AppConfig.ready``: ``name(holder)`` gives the ``name`` and ``owner``
    the resources page shows, or None for a holder not its own."""
    _other_holders.append(name)


def _other_holder(host: str, device: str) -> dict[str, Any] | None:
    """The holder of a device's lease that is not a job, as the app it
    belongs to names it; jobs are named from the database instead. None
    while Redis is unreachable: the live streams and the Resources page go
    on without it."""
    if not _other_holders:
        return None
    try:
        holder = leases.holder(host, device)
    except redis.RedisError:  # the leases are away with Redis; the rest of the picture is still true
        return None
    for name in _other_holders:
        named = name(holder) if holder is not None else None
        if named:
            return {"id": None, **named, "url": None}
    return None


def free_counts() -> dict[str, dict[str, int]]:
    """{"gpu": {"free": n, "total": m}, "cpu": {...}} over all live machines."""
    holders = _holders()
    counts = {"gpu": {"free": 0, "total": 0}, "cpu": {"free": 0, "total": 0}}
    for host, devices in _machines().items():
        for device in devices:
            entry = counts[device["kind"]]
            entry["total"] += 1
            entry["free"] += (host, device["id"]) not in holders and not _other_holder(host, device["id"])
    return counts


def _job_link(job: Job) -> dict[str, Any]:
    """A job as the resources page names and links it."""
    return {"id": job.pk, "name": job.name, "owner": job.owner.username, "url": reverse("job", args=[job.pk])}


def snapshot() -> dict[str, Any]:
    holders = _holders()
    workers = []
    for worker in Worker.alive():
        devices = []
        for device in worker.devices:
            job = holders.get((worker.hostname, device["id"]))
            holder = _job_link(job) if job else _other_holder(worker.hostname, device["id"])
            devices.append({**device, "job": holder})
        workers.append({
            "id": worker.id, "hostname": worker.hostname, "pid": worker.pid, "queues": worker.queues,
            "started_at": worker.started_at.isoformat(), "last_seen": worker.last_seen.isoformat(),
            "devices": devices, "disk": worker.disk,
        })
    queue = [
        {**_job_link(place.job), "status": place.job.status, "device": place.job.device_class,
         "resources": place.job.resources, "position": place.position, "priority": place.job.priority,
         "front": place.job.front_at is not None, "reason": place.reason}
        for device_class in queueorder.UNITS for place in queueorder.explained(device_class).places
    ]
    return {"workers": workers, "counts": free_counts(), "queue": queue, "users": queueorder.users_sharing()}
