"""The reconciler: finds jobs whose worker vanished, queued jobs whose
message the broker lost, and events that never reached the live bus, and
puts each right. Every worker runs it
periodically; running it twice at once is harmless, since each change is a
conditional transition."""

from __future__ import annotations

import logging
from datetime import timedelta

import redis
from django.conf import settings
from django.utils import timezone

from trainer import eventkinds

from . import bus, eventseek, kinds
from .models import Job, JobNode, Status, Worker
from .queue import enqueue, job_ids_in_broker

log = logging.getLogger(__name__)

# A queued job younger than this may simply not have reached the broker yet.
FORGOTTEN_AFTER = timedelta(seconds=10)
# The last events a requeued job's progress is looked for among (logs and
# hardware readings come between its progress events).
PROGRESS_EVENTS = 200
# Jobs whose state changed this recently have their events checked against
# the bus (``resend_unsent``): the reconciler runs every few seconds.
RESEND_WITHIN = timedelta(minutes=1)


def reconcile() -> None:
    alive = set(Worker.alive().values_list("id", flat=True))
    for job in Job.objects.filter(status__in=[Status.WAITING, Status.RUNNING]).exclude(worker__in=alive):
        recover(job)
    for node in JobNode.objects.filter(status__in=[Status.WAITING, Status.RUNNING]).exclude(worker__in=alive):
        lost_node(node)
    try:
        requeue_forgotten()
        resend_unsent()
    except redis.RedisError as exc:
        log.warning("cannot check the broker for lost jobs and events: %s", exc)
    Worker.objects.filter(last_seen__lt=timezone.now() - timedelta(days=1)).delete()


def recover(job: Job) -> None:
    """A job's worker stopped: requeue the job, or fail it after its last attempt."""
    lost = Worker.objects.filter(id=job.worker).first()
    who = f"Worker {lost.hostname}" if lost else "Its worker"
    frm, expect = [job.status], {"worker": job.worker}
    if job.abort_requested:
        job.transition(Status.ABORTED, frm, f"Aborted; {who.lower()} had stopped responding", expect=expect)
    elif job.attempt < settings.JOB_MAX_ATTEMPTS:
        message = f"{who} stopped responding during attempt {job.attempt} of {settings.JOB_MAX_ATTEMPTS}; requeued."
        if job.transition(Status.QUEUED, frm, message, expect=expect, worker="", progress=requeued_progress(job)):
            enqueue(job)
    else:
        message = (f"{who} stopped responding during attempt {job.attempt}; "
                   f"giving up after {settings.JOB_MAX_ATTEMPTS} attempts.")
        job.transition(Status.FAILED, frm, message, expect=expect, error=message)


def requeued_progress(job: Job) -> float:
    """Where a requeued job's bar stands: a kind that resumes, and whose run
    left its resume file, carries on from there, so it keeps the progress
    its last progress event gave (its next run says exactly where it
    resumed); any other job starts again at 0. The event is read from the
    job's file: the database's copy is written by the lost worker, at most
    once a second and behind it when that worker was slow."""
    kind = kinds.find(job.kind)
    if not (kind and kind.resume_file and (job.folder / kind.resume_file).is_file()):
        return 0.0
    recorded = (e["data"]["progress"] for e in reversed(eventseek.tail(job.folder, PROGRESS_EVENTS))
                if e["kind"] == eventkinds.PROGRESS)
    return max(job.progress, next(recorded, 0.0))


def lost_node(node: JobNode) -> None:
    """A node's worker stopped: the node has failed, which stops its job
    (node 0's runner sees it) and with it every other node."""
    lost = Worker.objects.filter(id=node.worker).first()
    who = f"worker {lost.hostname}" if lost else "its worker"
    node.move(Status.FAILED, [node.status], message=f"{who} stopped responding.")


def resend_unsent() -> None:
    """Put on the bus what the files of recently changed jobs hold and it
    lacks. A process that gives up on a stalled Redis (past its socket
    timeout) keeps no copy of the event it could not send: a running job's
    relay sends it with the job's next events (and is left to it), but a
    status published while no relay runs (the final one above all) would
    reach no list page. Each job costs a look at its stream's last entry
    and its file's end."""
    bus.client().ping()  # Redis answers: else every job's file would be read only to wait
    recent = Job.objects.filter(transitions__at__gte=timezone.now() - RESEND_WITHIN).exclude(status=Status.RUNNING)
    for job in recent.distinct():
        bus.Forwarder(job.pk, job.folder).forward()


def requeue_forgotten() -> None:
    """Send again the queued jobs that no broker message carries (Redis lost them)."""
    stale = Job.objects.filter(status=Status.QUEUED, queued_at__lt=timezone.now() - FORGOTTEN_AFTER)
    if not stale.exists():
        return
    in_broker = job_ids_in_broker()
    for job in stale:
        if job.pk not in in_broker:
            log.info("job %s was not in the broker; sending it again", job.pk)
            enqueue(job)
