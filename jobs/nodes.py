"""Jobs over several machines: a job whose ``resources["nodes"]`` is N > 1
runs as N nodes, each on its own worker with the job's devices per node.

Node 0 is the job itself. The worker that claims the job leases its devices,
picks a free port on its machine and records the rendezvous in the job's
``held["nodes"]`` (``placement``); once node 0 is launched it opens the other
nodes of the attempt (``open_nodes``): a ``JobNode`` row each, and a broker
message each. A worker that runs no other part of the job claims a node by a
conditional UPDATE, leases its devices all or none, and runs the kind's
command with the node's own ``held`` (``jobs.noderunner``). The kind's command
reads ``held["nodes"]``: ``count``, ``rank``, ``address`` and ``port`` of the
rendezvous, and ``timeout``, the seconds the nodes have to meet.

Every node ends with the job: a node's runner stops its node as soon as the
job no longer runs that attempt (aborted, failed, done, requeued), and node
0's runner stops the job when another node fails (its worker stopped
responding included, which the reconciler records) or has not started
within ``NODE_RENDEZVOUS_SECONDS`` (``trouble``).
"""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from .models import PENDING, TERMINAL, Job, JobNode, Status, Worker
from .queue import enqueue_node


def count(job: Job) -> int:
    return int(job.resources.get("nodes") or 1)


def free_port() -> int:
    """A port free on this machine now, for node 0's rendezvous."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def placement(job: Job) -> dict[str, Any]:
    """Node 0's ``held`` entries of a job over several machines; none for one machine."""
    if count(job) == 1:
        return {}
    return {"nodes": {"count": count(job), "rank": 0, "address": settings.NODE_ADDRESS, "port": free_port(),
                      "timeout": settings.NODE_RENDEZVOUS_SECONDS}}


def node_placement(job: Job, rank: int) -> dict[str, Any]:
    """Node ``rank``'s ``held["nodes"]``: node 0's rendezvous, its own rank."""
    return {**job.held["nodes"], "rank": rank}


def open_nodes(job: Job) -> None:
    """Offer the job's other nodes of this attempt to the workers. The rows
    of earlier runs go: a resumed job counts its attempts from 1 again."""
    JobNode.objects.filter(job=job).delete()
    for rank in range(1, count(job)):
        enqueue_node(JobNode.objects.create(job=job, attempt=job.attempt, rank=rank))


def close_nodes(job: Job, attempt: int) -> None:
    """The job's attempt ended: nodes no worker has started yet never will."""
    JobNode.objects.filter(job=job, attempt=attempt, status__in=PENDING).update(
        status=Status.ABORTED, message="The job ended before this node started.")


def runs_this_attempt(job_id: int, attempt: int) -> bool:
    """Whether the job still runs the attempt its nodes belong to."""
    return Job.objects.filter(pk=job_id, status=Status.RUNNING, attempt=attempt, abort_requested=False).exists()


def ended_done(job_id: int, attempt: int) -> bool:
    """Whether the job finished the attempt its nodes belong to: node 0 ended
    well, so its partners have done their part and are on their way out."""
    return Job.objects.filter(pk=job_id, status=Status.DONE, attempt=attempt).exists()


def abort_requested(job_id: int, attempt: int) -> bool:
    """Whether someone asked to abort the attempt its nodes belong to."""
    return Job.objects.filter(pk=job_id, attempt=attempt, abort_requested=True).exists()


def takes_part(job: Job, attempt: int, worker_id: str) -> bool:
    """Whether the worker already runs a node of the job's attempt (node 0 included)."""
    return job.worker == worker_id or JobNode.objects.filter(
        job=job, attempt=attempt, worker=worker_id).exclude(status__in=TERMINAL).exists()


def name(node: JobNode) -> str:
    host = node.held.get("host")
    return f"Node {node.rank + 1} of {node.job.resources['nodes']}" + (f" (on {host})" if host else "")


def trouble(job: Job, silent_seconds: float | None = None) -> str | None:
    """Why the running job must stop for one of its other nodes; None while
    they are fine. With ``silent_seconds``, a node whose worker has not beaten
    for that long counts as lost before the reconciler says so."""
    now = timezone.now()
    running_seconds = (now - job.started_at).total_seconds() if job.started_at else 0.0
    nodes = list(JobNode.objects.filter(job=job, attempt=job.attempt).select_related("job"))
    for node in nodes:
        if node.status == Status.FAILED:
            return f"{name(node)} failed: {node.message}"
    if silent_seconds is not None:
        cutoff = now - timedelta(seconds=silent_seconds)
        active = {node.worker: node for node in nodes if node.status in (Status.WAITING, Status.RUNNING)}
        for worker in Worker.objects.filter(id__in=active, last_seen__lt=cutoff):
            return f"{name(active[worker.id])} failed: worker {worker.hostname} stopped responding."
    late = [node for node in nodes if node.status in PENDING]
    if late and running_seconds > settings.NODE_RENDEZVOUS_SECONDS:
        which = ", ".join(str(node.rank + 1) for node in late)
        return (f"Node(s) {which} of {count(job)} did not start within {settings.NODE_RENDEZVOUS_SECONDS} s: "
                "each node needs a worker of its own, on another machine, with the devices free.")
    return None
