"""What a user can do to jobs. Views and the API call these, so pages and
the JSON API share one set of rules and messages."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from trainer import eventkinds
from web.api import ActionError

from . import bus, jobpaths, kinds, permissions, quotas, sharing
from .models import ACTIVE, PENDING, Job, JobTransition, Priority, Status
from .publish import publish
from .queue import enqueue


def require_change(job: Job, user: User) -> None:
    if not job.can_change(user):
        raise ActionError("Only the job's owner or staff may change it.", status=403)


def submit(owner: User, kind: str, name: str, params: dict[str, Any], resources: dict[str, Any],
           group: str = "", notes: str = "", prepare: Callable[[Job], None] | None = None,
           priority: str = Priority.NORMAL) -> Job:
    """Create and queue a job. ``prepare(job)`` may put files into the job's
    folder (an upload, say) before it is queued."""
    kinds.get(kind)  # an unknown kind is a programming error, not a user's
    refuse_without_permission(owner, kind, params)
    sharing.refuse_priority(owner, priority)
    sharing.refuse_over_limit(owner, resources)
    params = permissions.vouched(owner, kind, params)
    with transaction.atomic():
        refuse_over_quota(owner)
        job = Job.objects.create(kind=kind, name=name, group=group, notes=notes, owner=owner,
                                 params=params, resources=resources, priority=priority)
        # A new job starts with an empty folder, even where a rolled-back
        # transaction once handed out the same id and left files behind.
        shutil.rmtree(job.folder, ignore_errors=True)
        if prepare:
            prepare(job)
        submitted = JobTransition.objects.create(job=job, status=Status.QUEUED, message="Submitted")
        transaction.on_commit(lambda: _announce_and_enqueue(job, submitted))
    return job


def refuse_without_permission(owner: User, kind: str, params: dict[str, Any]) -> None:
    if refusal := permissions.missing(owner, kind, params):
        raise ActionError(refusal, status=403)


def refuse_over_quota(owner: User) -> None:
    if refused := quotas.refusal(owner):
        raise ActionError(*refused)


def _announce_and_enqueue(job: Job, submitted: JobTransition) -> None:
    bus.forget(job.pk)
    publish(job, eventkinds.STATUS, {"status": Status.QUEUED, "message": "Submitted", "progress": 0.0,
                                     "transition": submitted.pk})
    enqueue(job)


def abort(job: Job, user: User) -> None:
    require_change(job, user)
    if job.transition(Status.ABORTED, frm=PENDING, message=f"Aborted by {user.username} before it ran"):
        return
    if Job.objects.filter(pk=job.pk, status=Status.RUNNING).update(abort_requested=True):
        publish(job, eventkinds.ABORT, {"by": user.username})
        return
    job.refresh_from_db()
    raise ActionError(f"The job is {job.get_status_display().lower()}; only queued, waiting or running jobs can be aborted.")


def restart(job: Job, user: User) -> None:
    """Kill the process of a running job that has stopped responding; its
    worker then queues it again (``runner.restarted``)."""
    require_change(job, user)
    if Job.objects.filter(pk=job.pk, status=Status.RUNNING, silent_since__isnull=False).update(restart_requested=True):
        publish(job, eventkinds.RESTART, {"by": user.username})
        return
    raise ActionError("Only a running job that has stopped responding can be killed and restarted; "
                      "this one is responding (or no longer running).")


def _resume_file(job: Job) -> str:
    kind = kinds.find(job.kind)
    return kind.resume_file if kind else ""


def resumable(job: Job) -> bool:
    resume_file = _resume_file(job)
    return bool(resume_file and job.status in (Status.ABORTED, Status.FAILED) and (job.folder / resume_file).is_file())


def retried_by_clone(job: Job) -> bool:
    """Whether the job page's Retry (shown once the job failed) runs it again
    as a clone: for a kind that cannot resume, or a failed run that left
    nothing to resume from. A kind that resumes offers its own Resume."""
    return not _resume_file(job) or (job.status == Status.FAILED and not resumable(job))


def resume(job: Job, user: User) -> Job:
    """Queue an aborted or failed job again, of a kind whose run carries on
    from the file it left (its ``resume_file``: the run resumes from it on start)."""
    require_change(job, user)
    job.refresh_from_db()
    resume_file = _resume_file(job)
    if not resume_file:
        raise ActionError(f"A {_label(job)} job cannot be resumed; clone it to run it again.")
    if job.status not in (Status.ABORTED, Status.FAILED):
        raise ActionError(f"The job is {job.get_status_display().lower()}; only an aborted or failed job can be resumed.")
    if not (job.folder / resume_file).is_file():
        raise ActionError(f"The run left no checkpoint ({resume_file}) to resume from; clone it to start again.")
    refuse_if_lost_dependencies(job, "resumed")
    refuse_without_permission(job.owner, job.kind, job.params)
    refuse_over_quota(job.owner)
    sharing.refuse_over_limit(job.owner, job.resources)
    # A resumed job gets a fresh count of attempts: the ones before ended it.
    if not job.transition(Status.QUEUED, frm=[Status.ABORTED, Status.FAILED],
                          message=f"Resumed by {user.username} from its last checkpoint",
                          finished_at=None, abort_requested=False, error="", queued_at=timezone.now(), attempt=0,
                          front_at=None):
        raise ActionError("The job changed meanwhile; reload the page.")
    transaction.on_commit(lambda: enqueue(job))
    return job


def clone(job: Job, user: User) -> Job:
    """A new job with the same settings, owned by whoever clones it (the
    owner or staff). The files of the job's folder that its params name
    (what a user uploaded to make it) go with it: the clone gets its own
    copies, so deleting the first job leaves it whole."""
    require_change(job, user)
    refuse_if_lost_dependencies(job, "cloned")
    files = jobpaths.files_inside(job.params, job.folder)
    if gone := [name for name in files if not (job.folder / name).is_file()]:
        raise ActionError(f"The file this job was made from ({', '.join(gone)}) is gone, so it cannot be cloned; "
                          f"make a new {_label(job)} with the file.")

    def take_files(copy: Job) -> None:
        for name in files:
            target = copy.folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(job.folder / name, target)  # no second copy of a large upload where the disk allows
            except OSError:
                shutil.copyfile(job.folder / name, target)
        copy.params = jobpaths.moved(job.params, job.folder, copy.folder)
        Job.objects.filter(pk=copy.pk).update(params=copy.params)

    return submit(user, job.kind, f"{job.name} (clone)", dict(job.params), dict(job.resources),
                  group=job.group, notes=job.notes, prepare=take_files if files else None,
                  priority=sharing.priority_for_copy(user, job.priority))


def delete(job: Job, user: User) -> None:
    """Delete a finished job and its folder. The jobs that use it
    (``JobKind.dependents``) are told: each records the loss, which its page
    shows and which stops it from being resumed, cloned or started."""
    require_change(job, user)
    if job.status in ACTIVE:
        raise ActionError("The job is still active; abort it before deleting it.")
    kind = kinds.find(job.kind)
    dependents = list(kind.dependents(job)) if kind and kind.dependents else []
    lost = {"id": job.pk, "label": kind.label if kind else "job", "name": job.name, "by": user.username}
    job_id = job.pk
    job.delete_with_folder()
    bus.forget(job_id)
    for dependent in dependents:
        _tell_lost(dependent, lost)


def _tell_lost(dependent: Job, lost: dict[str, Any]) -> None:
    with transaction.atomic():
        dependent = Job.objects.select_for_update().get(pk=dependent.pk)
        dependent.lost_dependencies = [*dependent.lost_dependencies, lost]
        dependent.save(update_fields=["lost_dependencies"])
    publish(dependent, eventkinds.DEPENDENCY_DELETED, {**lost, "message": dependent.lost_dependency_notices()[-1]})


def refuse_if_lost_dependencies(job: Job, action: str) -> None:
    if job.lost_dependencies:
        raise ActionError(f"{' '.join(job.lost_dependency_notices())} The job cannot be {action}.")


def _label(job: Job) -> str:
    kind = kinds.find(job.kind)
    return kind.label.lower() if kind else "job"


def update(job: Job, user: User, changes: dict[str, str]) -> Job:
    """Rename, regroup or annotate."""
    require_change(job, user)
    allowed = {k: v for k, v in changes.items() if k in ("name", "group", "notes")}
    if allowed:
        Job.objects.filter(pk=job.pk).update(**allowed)
        job.refresh_from_db()
    return job


def filtered_jobs(params: dict[str, str]) -> QuerySet[Job]:
    jobs = Job.objects.select_related("owner").prefetch_related("transitions")
    if params.get("category"):
        jobs = jobs.filter(kind__in=kinds.names_in(params["category"]))
    if params.get("status"):
        jobs = jobs.filter(status__in=params["status"].split(","))
    if params.get("q"):
        q = params["q"]
        jobs = jobs.filter(Q(name__icontains=q) | Q(group__icontains=q) | Q(owner__username__icontains=q)
                           | Q(kind__icontains=q))
    return jobs
