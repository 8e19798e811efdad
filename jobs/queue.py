"""Sending jobs to the workers, and reading what the broker still holds.

Through Celery's current app: the project's, made when its package is
imported (with the settings), which this app does not name."""

from __future__ import annotations

import base64
import json

from celery import current_app as app
from django.conf import settings

from .bus import client
from .models import Job, JobNode

QUEUES = ("cpu", "gpu")
# The task that runs a job (``tasks.run``), sent by name so that the runner,
# which requeues jobs, can import this module.
RUN_TASK = "jobs.run"
# The task that runs one of the other nodes of a job over several machines (``tasks.run_node``).
RUN_NODE_TASK = "jobs.run_node"


def queue_for(job: Job) -> str:
    return "gpu" if job.device_class == "gpu" else "cpu"


def enqueue(job: Job) -> None:
    """Send only the job's id; the worker loads everything else from the database."""
    app.send_task(RUN_TASK, args=[job.pk], queue=queue_for(job))


def enqueue_node(node: JobNode) -> None:
    """Offer a node of a job over several machines to the workers: its job, attempt and rank."""
    app.send_task(RUN_NODE_TASK, args=[node.job_id, node.attempt, node.rank], queue=queue_for(node.job))


def _job_id(message: str) -> int | None:
    """The job a message runs; None for another message (a node's, say)."""
    try:
        envelope = json.loads(message)
        if isinstance(envelope, list):  # unacked entries are [message, exchange, routing key]
            envelope = envelope[0]
        if envelope["headers"]["task"] != RUN_TASK:
            return None
        args = json.loads(base64.b64decode(envelope["body"]))[0]
        return int(args[0])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def job_ids_in_broker() -> set[int]:
    """Ids of the jobs with a message waiting in a queue or held unacknowledged."""
    prefix = settings.CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"]
    redis = client()
    messages: list[bytes] = []
    for queue in QUEUES:
        messages.extend(redis.lrange(prefix + queue, 0, -1))
    messages.extend(redis.hvals(prefix + "unacked"))
    ids = {_job_id(m.decode()) for m in messages}
    ids.discard(None)
    return ids  # type: ignore[return-value]
