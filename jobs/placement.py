"""Where a job may start: on this worker's machine, or on another one.

Every worker takes jobs from the same broker queue, so a worker may receive
a job it cannot start now (its devices are busy) or ever (it has too few)
while a worker on another machine could. Such a worker passes the job on
instead of keeping it waiting: ``runner`` asks ``elsewhere`` before it
claims a job and again while the job waits for its devices. Two workers on
one machine share its devices (leases are per machine), so only workers on
other machines are asked.
"""

from __future__ import annotations

from typing import Any

from . import leases
from .models import Job, JobNode, Status, Worker
from .workerinfo import WorkerInfo


def devices_in_use(host: str) -> set[str]:
    """The devices on ``host`` that running jobs, and running nodes of jobs
    over several machines, hold by the database's record."""
    held = [*Job.objects.filter(status=Status.RUNNING, held__host=host).values_list("held", flat=True),
            *JobNode.objects.filter(status=Status.RUNNING, held__host=host).values_list("held", flat=True)]
    return {device for record in held for device in record.get("devices", [])}


def can_serve(info: WorkerInfo, resources: dict[str, Any]) -> bool:
    """Whether the worker has the devices the request names, busy or not."""
    return not info.candidates(resources)[2]


def can_start_now(info: WorkerInfo, resources: dict[str, Any]) -> bool:
    """Whether enough of the devices the request may use are free on the
    worker's machine: held by no running job and leased by no one."""
    candidates, count, problem = info.candidates(resources)
    if problem:
        return False
    busy = devices_in_use(info.host)
    free = [d for d in candidates if d not in busy and leases.holder(info.host, d) is None]
    return len(free) >= count


def _others(worker: WorkerInfo) -> list[WorkerInfo]:
    """The live workers on other machines, as they last reported themselves."""
    alive = Worker.alive().exclude(hostname=worker.host).order_by("last_seen")
    return [WorkerInfo(id=w.id, host=w.hostname, devices=w.devices) for w in alive]


def elsewhere(job: Job, worker: WorkerInfo) -> WorkerInfo | None:
    """A worker on another machine the job should go to, or None to keep it
    here: one that could start it now when this one cannot, or, when this one
    can never serve it, one that can."""
    if can_start_now(worker, job.resources):
        return None
    others = _others(worker)
    ready = next((other for other in others if can_start_now(other, job.resources)), None)
    if ready is not None or can_serve(worker, job.resources):
        return ready
    return next((other for other in others if can_serve(other, job.resources)), None)
