"""Runs one of the other nodes of a job over several machines inside a
worker (see ``jobs.nodes``): claim the node, lease its devices, launch the
kind's command for it, relay its log, and stop it as soon as the job no
longer runs the node's attempt (once the job is done, after a grace in which
the node's process ends on its own).

``run_node`` is a plain function the Celery task calls; it is safe to call
twice for the same node: the claim is a conditional UPDATE.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time

import redis

from trainer import jobfiles

from . import leases, nodes
from .folderwatch import FolderWatch
from .logfile import LogTail, tail_lines
from .models import Job, JobNode, Status
from .queue import enqueue_node
from .runner import ABORT_POLL_SECONDS, RELAY_POLL_SECONDS, WAIT_POLL_SECONDS, launch, relay_log, take_devices
from .workerinfo import WorkerInfo

log = logging.getLogger(__name__)

# How long a worker that may not run a node (it runs another part of the
# job, or lacks the devices) keeps it before offering it to the others again.
PASS_ON_SECONDS = 1.0
# How long a node's process may take to end on its own once its job is done.
# Node 0 ends first (it writes the last snapshot and the job's end), and the
# others are then leaving their process group: stopping them at once had a
# node that finished its work on a loaded machine recorded as stopped.
DONE_EXIT_GRACE_SECONDS = 30.0


def run_node(job_id: int, attempt: int, rank: int, worker: WorkerInfo) -> None:
    node = JobNode.objects.filter(job_id=job_id, attempt=attempt, rank=rank).select_related("job").first()
    if node is None or node.status != Status.QUEUED:
        return
    job = node.job
    if nodes.takes_part(job, attempt, worker.id) or worker.candidates(job.resources)[2]:
        time.sleep(PASS_ON_SECONDS)
        enqueue_node(node)
        return
    if not node.move(Status.WAITING, [Status.QUEUED], worker=worker.id, held={"host": worker.host}):
        return
    devices = wait_for_devices(node, worker)
    if devices is None:
        node.move(Status.ABORTED, [Status.WAITING], message="The job ended before this node started.")
        return
    try:
        run(node, worker, devices)
    finally:
        leases.release(worker.host, devices, job.pk)


def wait_for_devices(node: JobNode, worker: WorkerInfo) -> list[str] | None:
    """Block until the node's devices are leased; None once the job no
    longer runs the node's attempt."""
    candidates, count, _ = worker.candidates(node.job.resources)
    while nodes.runs_this_attempt(node.job_id, node.attempt):
        try:
            taken = take_devices(node.job, worker, candidates, count)
        except redis.RedisError as exc:
            log.warning("cannot lease devices for node %s of job %s yet: %s", node.rank, node.job_id, exc)
            taken = None
        if taken:
            return taken
        time.sleep(WAIT_POLL_SECONDS)
    return None


def run(node: JobNode, worker: WorkerInfo, devices: list[str]) -> None:
    job = node.job
    held = {"host": worker.host, "devices": devices, "nodes": nodes.node_placement(job, node.rank)}
    if not node.move(Status.RUNNING, [Status.WAITING], held=held):
        return
    job.held = held  # the kind's command reads this node's place, not node 0's
    code, stopped = supervise(node, launch(job, devices, node.rank))
    # The processes agree on stopping among themselves, so after an abort
    # this node's may end, cleanly or not, before its runner looked.
    aborted = nodes.abort_requested(job.pk, node.attempt)
    if code == 0 and not aborted:  # also when the job ended done a moment before its last node exited
        node.move(Status.DONE, [Status.RUNNING])
    elif stopped or aborted:
        node.move(Status.ABORTED, [Status.RUNNING], message="Stopped with its job.")
    else:
        node.move(Status.FAILED, [Status.RUNNING], message=failure_message(job, node.rank, code))


def supervise(node: JobNode, process: subprocess.Popen) -> tuple[int, bool]:
    """Relay the node's log into the job's events until its process group
    ends; stop it once its job no longer runs this attempt. Returns the exit
    code, and whether it was stopped."""
    with FolderWatch(node.job.folder, process.pid, RELAY_POLL_SECONDS, RELAY_POLL_SECONDS) as watch:
        return _supervise(node, process, watch)


def _supervise(node: JobNode, process: subprocess.Popen, watch: FolderWatch) -> tuple[int, bool]:
    log_tail = LogTail(node.job.folder / jobfiles.node_log(node.rank))
    stopped = False
    last_check = 0.0
    done_at: float | None = None
    while True:
        code = process.poll()
        relay_log(node.job, [f"[node {node.rank + 1}] {line}" for line in log_tail.read_lines()])
        if code is not None:
            return code, stopped
        now = time.monotonic()
        if not stopped and now - last_check >= ABORT_POLL_SECONDS:
            last_check = now
            if not nodes.runs_this_attempt(node.job_id, node.attempt):
                if done_at is None and nodes.ended_done(node.job_id, node.attempt):
                    done_at = now
                if done_at is None or now - done_at >= DONE_EXIT_GRACE_SECONDS:
                    process.send_signal(signal.SIGTERM)  # the supervisor ends the group
                    stopped = True
        watch.wait(last_check + ABORT_POLL_SECONDS - now)


def failure_message(job: Job, rank: int, code: int) -> str:
    tail = tail_lines(job.folder / jobfiles.node_log(rank), 10)
    return f"its process exited with code {code}." + ("\n" + "\n".join(tail) if tail else "")
