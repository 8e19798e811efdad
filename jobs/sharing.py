"""What users and staff can do to the order in which jobs get devices
(``queueorder``): a job's priority, staff moving a job to the front, and
staff setting how many devices a user may hold at once. Views and the API
call these, so both share one set of rules and messages."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from trainer import eventkinds
from web.api import ActionError

from . import queueorder
from .models import PENDING, DeviceLimit, Job, Priority
from .publish import publish

PRIORITY_NOTE = "High priority is given by staff; ask one, or choose normal or low."


def refuse_priority(user: User, priority: str) -> None:
    """Refuse a priority the user may not give (high, unless staff) or that is none."""
    if priority not in Priority.values:
        raise ActionError(f"Choose a priority among: {', '.join(Priority.values)}.", status=400)
    if priority == Priority.HIGH and not user.is_staff:
        raise ActionError(PRIORITY_NOTE, status=403)


def refuse_over_limit(owner: User, resources: dict[str, Any]) -> None:
    """Refuse a job asking for more devices than its owner may ever hold at once."""
    probe = Job(resources=resources)
    wanted = queueorder.devices_wanted(probe)
    limit = DeviceLimit.of(owner.pk)
    if limit and wanted > limit:
        kind = probe.device_class
        raise ActionError(f"The job asks for {queueorder.units(kind, wanted)}; {owner.username} may hold "
                          f"{queueorder.units(kind, limit)} at once. Ask for fewer, or ask staff to raise the limit.",
                          status=403)


def priority_for_copy(user: User, priority: str) -> str:
    """The priority a clone by ``user`` of a job of ``priority`` gets: the
    same, but normal where only staff could give it."""
    return Priority.NORMAL if priority == Priority.HIGH and not user.is_staff else priority


def _require_pending(job: Job) -> None:
    job.refresh_from_db()
    if job.status not in PENDING:
        raise ActionError(f"The job is {job.get_status_display().lower()}; only a queued or waiting job "
                          "has a place in the queue.")


def _announce(job: Job, by: User, message: str) -> None:
    publish(job, eventkinds.QUEUE, {"by": by.username, "priority": job.priority, "message": message})


def set_priority(job: Job, user: User, priority: str) -> Job:
    """The owner may lower or raise their pending job between low and normal;
    staff may give any priority to anyone's."""
    if not job.can_change(user):
        raise ActionError("Only the job's owner or staff may change its priority.", status=403)
    refuse_priority(user, priority)
    _require_pending(job)
    Job.objects.filter(pk=job.pk).update(priority=priority)
    job.refresh_from_db()
    _announce(job, user, f"Priority set to {job.get_priority_display().lower()} by {user.username}")
    return job


def move_to_front(job: Job, user: User) -> Job:
    """Staff only: the job goes before every other of its class (the latest moved first)."""
    if not user.is_staff:
        raise ActionError("Only staff may move a job to the front of the queue.", status=403)
    _require_pending(job)
    Job.objects.filter(pk=job.pk).update(front_at=timezone.now())
    job.refresh_from_db()
    _announce(job, user, f"Moved to the front of the queue by {user.username}")
    return job


def change_place(job: Job, user: User, priority: str = "", front: bool = False) -> Job:
    """What the queue form or API asks: a new priority, a move to the front, or both."""
    if priority:
        set_priority(job, user, priority)
    if front:
        move_to_front(job, user)
    return job


def set_limit(user: User, target: User, limit: int | None) -> None:
    """Staff only: how many devices of a class ``target`` may hold at once
    (0: no limit; None: the default, ``DEVICE_LIMIT_PER_USER``)."""
    if not user.is_staff:
        raise ActionError("Only staff may set how many devices a user may hold.", status=403)
    if limit is None:
        DeviceLimit.objects.filter(user=target).delete()
    else:
        DeviceLimit.objects.update_or_create(user=target, defaults={"limit": limit})


def limit_of(user: User) -> int:
    return DeviceLimit.of(user.pk)
