"""The worker process's own life: register at start, beat every few
seconds (liveness, device readings, lease refresh, reconciling, the apps'
periodic work), and leave
cleanly at shutdown. ``connect()`` hooks it to Celery's worker signals; the
``worker`` management command calls it before starting Celery."""

from __future__ import annotations

import logging
import os
import threading

from celery import current_app
from celery.signals import worker_ready, worker_shutdown, worker_shutting_down
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from . import hostload, leases, periodic, runner, workerinfo
from .devices import inventory
from .models import Job, JobNode, Status, Worker
from .reconcile import reconcile
from .workerinfo import WorkerInfo

log = logging.getLogger(__name__)

RECONCILE_EVERY_BEATS = 3

_stop = threading.Event()


def connect() -> None:
    worker_ready.connect(on_worker_ready)
    worker_shutdown.connect(on_worker_shutdown)
    worker_shutting_down.connect(on_worker_shutting_down)


def beat(info: WorkerInfo) -> None:
    info.devices = inventory(settings.CPU_SLOTS)
    readings = {"hostname": info.host, "devices": info.devices, "disk": hostload.disk(settings.DATA_DIR)}
    Worker.objects.update_or_create(
        id=info.id,
        defaults={**readings, "last_seen": timezone.now()},
        create_defaults={**readings, "pid": os.getpid(), "queues": _queues()},
    )
    refresh_leases(info)


def refresh_leases(info: WorkerInfo) -> None:
    """Re-assert the leases of the jobs, and of the other nodes of jobs over
    several machines, that run on this worker."""
    running = [(job.pk, job.held) for job in Job.objects.filter(worker=info.id, status=Status.RUNNING)]
    running += [(node.job_id, node.held) for node in JobNode.objects.filter(worker=info.id, status=Status.RUNNING)]
    for job_id, held in running:
        if taken := leases.refresh(info.host, held.get("devices", []), job_id):
            log.error("job %s runs on %s, which another job has leased", job_id, ", ".join(taken))


def _queues() -> list[str]:
    return sorted(q.name for q in current_app.amqp.queues.consume_from.values())


def _heartbeat_loop(info: WorkerInfo) -> None:
    beats = 0
    while not _stop.wait(settings.WORKER_HEARTBEAT_SECONDS):
        try:
            beat(info)
            beats += 1
            if beats % RECONCILE_EVERY_BEATS == 0:
                reconcile()
            periodic.run_all()
        except Exception:  # a database or Redis outage must not end the heartbeat
            log.exception("worker heartbeat failed; retrying")
        finally:
            close_old_connections()


def on_worker_ready(**kwargs: object) -> None:
    info = WorkerInfo.for_this_process(settings.CPU_SLOTS)
    workerinfo.set_current(info)
    beat(info)
    reconcile()
    close_old_connections()
    threading.Thread(target=_heartbeat_loop, args=(info,), name="heartbeat", daemon=True).start()
    log.info("worker %s on %s offers %s", info.id, info.host, [d["id"] for d in info.devices])


def on_worker_shutting_down(**kwargs: object) -> None:
    """SIGTERM (Celery's warm shutdown would wait for the jobs to end, hours
    for a model) and SIGQUIT alike hand the running jobs back."""
    runner.hand_back_jobs()


def on_worker_shutdown(**kwargs: object) -> None:
    _stop.set()
    info = workerinfo.recorded()
    if info is not None:
        Worker.objects.filter(id=info.id).delete()
