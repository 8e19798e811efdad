"""Runs one job inside a worker: claim, lease devices, launch its process
group, relay its events and log, record the outcome.

``run_job`` is a plain function the Celery task calls with a job id. It is
safe to call twice for the same job: the claim is a conditional UPDATE, and
the second caller returns without doing anything.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import F
from django.utils import timezone

from trainer import diskspace, environment, eventkinds, eventlog, jobfiles
from trainer.gpus import CUDA_NUMBERING

from . import cputhreads, eventseek, kinds, leases, nodes, permissions, placement, queueorder
from .bus import Forwarder
from .folderwatch import FolderWatch
from .logfile import LogTail, tail_lines
from .models import TERMINAL, Job, Status
from .publish import publish
from .queue import enqueue
from .shownpaths import shown
from .watchdog import Watchdog
from .workerinfo import WorkerInfo

log = logging.getLogger(__name__)

# Set once this worker shuts down: its jobs stop and go back to the queue.
_handing_back = threading.Event()

PROCGROUP = Path(__file__).with_name("procgroup.py")
WAIT_POLL_SECONDS = 0.2
# How often a job waiting for devices looks for a machine that could start it now.
PASS_ON_CHECK_SECONDS = 1.0
# How long a queued job that comes before the jobs waiting here, and could
# start here, may go unclaimed before one of them gives way to it (``give_way``).
GIVE_WAY_AFTER_SECONDS = 1.0
# How long, in heartbeats, node 0 of a failed job over several machines
# waits for another node to say why (a node's worker one heartbeat less silent counts as dead).
NODE_REPORT_HEARTBEATS = 3
# The least time between two relays of a job's events and log (a job that
# writes without pause is relayed in batches), and how often a runner
# looks where it cannot be told of a write (``FolderWatch``).
RELAY_POLL_SECONDS = 0.02
ABORT_POLL_SECONDS = 0.5
PROGRESS_WRITE_SECONDS = 1.0
LOG_LINES_PER_EVENT = 200
# The last events searched for the job's own error: it is among the last it wrote.
FAILURE_EVENTS = 1000
# The log lines searched for a traceback, and the most of its exception's
# message that a failure's sentence quotes.
TRACEBACK_LINES = 200
MAX_ERROR_CHARS = 300


def run_job(job_id: int, worker: WorkerInfo) -> None:
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return
    if job.status == Status.QUEUED and _handing_back.is_set():
        enqueue(job)  # its message came as this worker stopped: another takes it
        return
    if job.status == Status.QUEUED and (other := _better_worker(job, worker)) is not None:
        log.info("job %s goes to worker %s, which can start it now", job.pk, other.host)
        enqueue(job)
        return
    if not claim(job, worker):
        return  # a duplicated delivery, or aborted while queued
    while job is not None:
        claimed = job
        job = run_claimed(job, worker)
        ended(claimed)


def ended(job: Job) -> None:
    """The work its kind does once a job has ended (``JobKind.ended``), after
    its devices are free; a failure of it is logged, the job's end stands."""
    kind = kinds.find(job.kind)
    if kind is None or kind.ended is None:
        return
    job.refresh_from_db(fields=["status"])
    if job.status not in TERMINAL:
        return
    try:
        kind.ended(job)
    except Exception:
        log.exception("job %s: the work after its end failed", job.pk)


def run_claimed(job: Job, worker: WorkerInfo) -> Job | None:
    """Wait for the claimed job's devices, run it and record its end. Returns
    the job this thread took on in its place, when it gave way to one that
    comes before it (``give_way``), else None."""
    if job.lost_dependencies:
        message = " ".join(job.lost_dependency_notices()) + " The job cannot run without it."
        job.transition(Status.FAILED, frm=[Status.WAITING], message=message, error=message)
        return None
    if not still_permitted(job):  # revoked since it was queued
        return None
    while (devices := wait_for_devices(job, worker)) is not None:
        if isinstance(devices, Job):
            return devices
        try:
            if still_permitted(job) and start(job, worker, devices):
                process = launch_or_fail(job, devices)
                if process:
                    nodes.open_nodes(job)
                    finish(job, *supervise(job, process))
            return None
        except LeaseLost as exc:
            log.warning("job %s waits again: %s", job.pk, exc)
        finally:
            leases.release(worker.host, devices, job.pk)
            nodes.close_nodes(job, job.attempt)
    return None


def hand_back_jobs() -> None:
    """The worker is stopping (SIGTERM or SIGQUIT): each of its runners stops
    its job's process group, as an abort would, and requeues the job, and a
    job waiting for devices here goes back to the queue, so the worker exits
    within the abort grace rather than with its jobs still running."""
    _handing_back.set()


def hand_back(job: Job, frm: str) -> None:
    """Requeue a job this stopping worker held, whatever its attempt: the
    stop is the operator's, not the job's doing."""
    who = f"Worker {job.held.get('host') or job.worker}"
    message = f"{who} stopped during attempt {job.attempt} of {settings.JOB_MAX_ATTEMPTS}; requeued."
    if job.transition(Status.QUEUED, frm=[frm], message=message, worker="", progress=0.0):
        enqueue(job)


class LeaseLost(Exception):
    """A device's lease ran out between its taking and the job's start
    (a database slow to commit), and another job took the device."""


def still_permitted(job: Job) -> bool:
    """Check the owner's permissions for the job again (when it is claimed,
    and when its process is about to start after waiting for devices, since
    they may be revoked meanwhile); fail the job, saying why, if they no
    longer allow it. The owner is read afresh: a user caches its permissions."""
    owner = User.objects.get(pk=job.owner_id)
    if refusal := permissions.missing(owner, job.kind, job.params):
        job.transition(Status.FAILED, frm=[Status.WAITING], message=refusal, error=refusal)
        return False
    return True


def claim(job: Job, worker: WorkerInfo) -> bool:
    """Take a queued job for this worker: True for one caller only."""
    return job.transition(Status.WAITING, frm=[Status.QUEUED], message=f"Claimed by worker {worker.host}",
                          worker=worker.id, attempt=F("attempt") + 1)


def start(job: Job, worker: WorkerInfo, devices: list[str]) -> bool:
    """Mark the job running on the devices it leased, if it is still this
    worker's. The leases are asserted again before the commit: once the
    database says the job runs there, no other job takes its devices
    (``take_devices``), but until then only the leases guard them, and a
    lease may have run out while the database kept the job waiting. Raises
    ``LeaseLost``, changing nothing, when another job holds one by then."""

    def still_leased() -> None:
        try:
            taken = leases.refresh(worker.host, devices, job.pk)
        except redis.RedisError as exc:  # the heartbeat asserts them again once Redis is back
            log.warning("cannot check the leases of job %s as it starts: %s", job.pk, exc)
            return
        if taken:
            raise LeaseLost(f"another job took {', '.join(taken)} while this one was starting")

    return job.transition(Status.RUNNING, frm=[Status.WAITING], expect={"worker": worker.id},
                          message=f"Running on {worker.host}: {', '.join(devices)}", confirm=still_leased,
                          held={"host": worker.host, "devices": devices, **nodes.placement(job)},
                          started_at=timezone.now())


def wait_for_devices(job: Job, worker: WorkerInfo) -> list[str] | Job | None:
    """Block until the job's devices are leased, in its turn (``queueorder``);
    None if it left the queue meanwhile (aborted), went on to a worker on
    another machine that can start it sooner, or can never run here nor
    elsewhere (then it is failed); another job when this one gave way to it."""
    candidates, count, problem = worker.candidates(job.resources)
    last_pass_on_check = 0.0
    unclaimed: tuple[int, float] | None = None  # a queued job before this one, and since when it blocks it
    while True:
        job.refresh_from_db(fields=["status"])
        if job.status != Status.WAITING:
            return None
        if _handing_back.is_set():
            hand_back(job, Status.WAITING)
            return None
        now = time.monotonic()
        if problem or now - last_pass_on_check >= PASS_ON_CHECK_SECONDS:
            last_pass_on_check = now
            if (other := _better_worker(job, worker)) is not None:
                pass_on(job, worker, other)
                return None
            if problem:
                job.transition(Status.FAILED, frm=[Status.WAITING], message=problem, error=problem)
                return None
        order = queueorder.queue(job.device_class)
        blocker = queueorder.first_blocker(order, job, worker)
        if blocker is None and order.can_start(job):
            try:
                taken = take_devices(job, worker, candidates, count)
                if taken and not _still_first(job, worker):
                    leases.release(worker.host, taken, job.pk)
                    taken = None
            except redis.RedisError as exc:
                log.warning("cannot lease devices for job %s yet: %s", job.pk, exc)
                taken = None
            if taken:
                return taken
        if blocker is not None and blocker.job.status == Status.QUEUED:
            if unclaimed is None or unclaimed[0] != blocker.job.pk:
                unclaimed = (blocker.job.pk, now)
            elif now - unclaimed[1] >= GIVE_WAY_AFTER_SECONDS and give_way(job, blocker.job, order, worker):
                return blocker.job
        else:
            unclaimed = None
        time.sleep(WAIT_POLL_SECONDS)


def _still_first(job: Job, worker: WorkerInfo) -> bool:
    """Whether the job may keep the devices it just leased: the order is read
    again after the lease, since a job that ended between the first reading
    and the lease (its devices the ones leased) changed who comes first. A
    job records its end before its devices are released, so this reading
    sees every end that freed them."""
    order = queueorder.queue(job.device_class)
    return queueorder.first_blocker(order, job, worker) is None and order.can_start(job)


def give_way(job: Job, other: Job, order: queueorder.Queue, worker: WorkerInfo) -> bool:
    """A queued job that comes before the jobs waiting here, and could start
    here now, has found no thread to claim it for ``GIVE_WAY_AFTER_SECONDS``:
    every thread of the worker holds a waiting job (or its message is far
    back in the broker, or lost). The last of them in the order goes back to
    the queue, and its thread claims the other. Returns whether it did."""
    last = queueorder.last_waiting_here(order, worker)
    if last is None or last.pk != job.pk or not _could_start_here(other, worker) or not claim(other, worker):
        return False
    message = (f"Back in the queue: {other.owner.username}'s job “{other.name}” (#{other.pk}) comes first, "
               f"and no other thread of worker {worker.host} was free to take it")
    if job.transition(Status.QUEUED, frm=[Status.WAITING], message=message, expect={"worker": worker.id},
                      worker="", attempt=F("attempt") - 1):
        enqueue(job)
    log.info("job %s gives way to job %s", job.pk, other.pk)
    return True


def _could_start_here(job: Job, worker: WorkerInfo) -> bool:
    try:
        return placement.can_start_now(worker, job.resources)
    except redis.RedisError:
        return False


def _better_worker(job: Job, worker: WorkerInfo) -> WorkerInfo | None:
    """``placement.elsewhere``, or None while Redis cannot say which devices are leased."""
    try:
        return placement.elsewhere(job, worker)
    except redis.RedisError as exc:
        log.warning("cannot see other workers' devices for job %s: %s", job.pk, exc)
        return None


def pass_on(job: Job, worker: WorkerInfo, other: WorkerInfo) -> None:
    """Give a job waiting here back to the queue for a worker on another
    machine; the claim's attempt is given back with it."""
    message = f"Passed on by worker {worker.host}: worker {other.host} can run it sooner"
    if job.transition(Status.QUEUED, frm=[Status.WAITING], message=message, expect={"worker": worker.id},
                      worker="", attempt=F("attempt") - 1):
        enqueue(job)


def take_devices(job: Job, worker: WorkerInfo, candidates: list[str], count: int) -> list[str] | None:
    """Lease ``count`` of the candidates, never one that a running job on
    this host holds by the database's record: Redis may have lost its lease
    (restarted without its data, or the lease expired under a late heartbeat)."""
    busy = placement.devices_in_use(worker.host)
    return leases.acquire(worker.host, [d for d in candidates if d not in busy], count, job.pk)


def launch(job: Job, devices: list[str], rank: int = 0) -> subprocess.Popen:
    """Start the kind's command for ``job.held``; node 0 (every job on one
    machine) writes ``config.json``, which the other nodes of a job over
    several machines then find in the shared job folder."""
    folder = job.folder
    if rank == 0:
        folder.mkdir(parents=True, exist_ok=True)
        config = {**job.params, "job_id": job.pk, "devices": devices}
        (folder / jobfiles.CONFIG).write_text(json.dumps(config, indent=2))
    env = {**job_environment(), "PYTHONPATH": str(settings.BASE_DIR), "PYTHONUNBUFFERED": "1"}
    env["CUDA_VISIBLE_DEVICES"] = ",".join(d.removeprefix("gpu") for d in devices if d.startswith("gpu"))
    env.update(CUDA_NUMBERING)  # so that CUDA's device N is the worker's gpuN
    env.update(cputhreads.thread_environment(devices, settings.CPU_SLOTS, cputhreads.machine_cores(), env))
    command = kinds.get(job.kind).command(job)
    argv = [sys.executable, str(PROCGROUP), str(os.getpid()), str(settings.JOB_ABORT_GRACE_SECONDS), "--", *command]
    with open(folder / jobfiles.node_log(rank), "ab") as log_file:
        return subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=folder, env=env, start_new_session=True)


def launch_or_fail(job: Job, devices: list[str]) -> subprocess.Popen | None:
    """Launch the job, or fail it when the disk has no room for its folder
    (it would otherwise stay running with nothing running it)."""
    try:
        return launch(job, devices)
    except OSError as exc:
        if not diskspace.is_full(exc):
            raise
        message = diskspace.full_message(settings.DATA_DIR)
        job.transition(Status.FAILED, frm=[Status.RUNNING], message=message, error=message)
        return None


def job_environment() -> dict[str, str]:
    """The worker's environment as far as ``trainer.environment`` allows: a
    job may run its owner's code, and needs no secret."""
    return environment.allowed(os.environ)


def supervise(job: Job, process: subprocess.Popen) -> tuple[int, str]:
    """Relay the job's log and events until its process group ends; pass on
    an abort, and stop it when another of its nodes is in trouble; say when
    it stops responding, and kill it when a restart is asked for. Returns
    the exit code and that trouble ("" when none)."""
    with FolderWatch(job.folder, process.pid, RELAY_POLL_SECONDS, RELAY_POLL_SECONDS) as watch:
        return _supervise(job, process, watch)


def _supervise(job: Job, process: subprocess.Popen, watch: FolderWatch) -> tuple[int, str]:
    trouble = ""
    forwarder = Forwarder(job.pk, job.folder)
    log_tail = LogTail(job.folder / jobfiles.LOG)
    progress_written = job.progress
    last_progress_write = last_abort_check = 0.0
    abort_sent = killed_for_restart = False
    watchdog = Watchdog(settings.JOB_SILENT_SECONDS, time.monotonic())
    # The other nodes' runners write the events of a job over several
    # machines into its shared folder, and no notification comes of that.
    longest_wait = RELAY_POLL_SECONDS if nodes.count(job) > 1 else ABORT_POLL_SECONDS
    while True:
        code = process.poll()
        lines = log_tail.read_lines()
        relay_log(job, lines)
        forwarded = forwarder.forward()
        for event in forwarded:
            if event["kind"] == eventkinds.PROGRESS:
                job.progress = float(event["data"]["progress"])
        now = time.monotonic()
        if lines or forwarded:
            watchdog.heard(now)
        if job.progress != progress_written and (now - last_progress_write >= PROGRESS_WRITE_SECONDS or code is not None):
            Job.objects.filter(pk=job.pk).update(progress=job.progress)
            progress_written, last_progress_write = job.progress, now
        if code is not None:
            mark_silent(job, None)
            return code, trouble
        if not abort_sent and _handing_back.is_set():
            process.send_signal(signal.SIGTERM)
            abort_sent = True
        if not abort_sent and now - last_abort_check >= ABORT_POLL_SECONDS:
            last_abort_check = now
            trouble = (nodes.trouble(job) if nodes.count(job) > 1 else None) or ""
            if trouble or Job.objects.filter(pk=job.pk, abort_requested=True).exists():
                process.send_signal(signal.SIGTERM)  # the supervisor ends the group
                abort_sent = True
            elif not killed_for_restart and Job.objects.filter(pk=job.pk, restart_requested=True).exists():
                # A stuck process may not heed SIGTERM: the supervisor SIGKILLs its group at once.
                process.send_signal(signal.SIGUSR1)
                killed_for_restart = True
            mark_silent(job, watchdog.limit() if watchdog.silent(now) else None)
        due = [last_abort_check + ABORT_POLL_SECONDS]
        if job.progress != progress_written:
            due.append(last_progress_write + PROGRESS_WRITE_SECONDS)
        if forwarder.pending:  # the bus was down: try again soon
            due.append(now + RELAY_POLL_SECONDS)
        watch.wait(min(longest_wait, min(due) - now))


def mark_silent(job: Job, limit: float | None) -> None:
    """Record (``limit``: the silence allowed, in seconds) or clear that the
    job's process is not responding, when that changes."""
    if (limit is not None) == (job.silent_since is not None):
        return
    job.silent_since = timezone.now() if limit is not None else None
    Job.objects.filter(pk=job.pk).update(silent_since=job.silent_since)
    publish(job, eventkinds.SILENCE, {"since": job.silent_since.isoformat() if job.silent_since else None,
                                       "limit_seconds": limit})


def relay_log(job: Job, lines: list[str]) -> None:
    """The job's new log lines as ``log`` events. On a full disk they are
    dropped (they are in ``log.txt`` as far as it could hold them): the
    relay goes on, so the job is still watched and its end recorded."""
    try:
        for start in range(0, len(lines), LOG_LINES_PER_EVENT):
            eventlog.append(job.folder, eventkinds.LOG, {"lines": lines[start:start + LOG_LINES_PER_EVENT]})
    except OSError as exc:
        if not diskspace.is_full(exc):
            raise
        log.warning("job %s: %d log line(s) not recorded: the disk is full", job.pk, len(lines))


def finish(job: Job, code: int, trouble: str = "") -> None:
    """Record how the job's process ended: ``code`` is the supervisor's exit
    code, negative when a signal this app did not send killed the job;
    ``trouble``, why it was stopped for another of its nodes."""
    job.refresh_from_db()
    if job.abort_requested:
        job.transition(Status.ABORTED, frm=[Status.RUNNING], message="Aborted")
    elif job.restart_requested:
        restarted(job)
    elif code != 0 and _handing_back.is_set():
        hand_back(job, Status.RUNNING)
    elif code != 0 and (trouble := trouble or node_trouble(job)):
        job.transition(Status.FAILED, frm=[Status.RUNNING], message=trouble, error=trouble)
    elif code == 0:
        job.transition(Status.DONE, frm=[Status.RUNNING], message="Finished")
    elif code < 0:
        killed(job, _signal_name(-code))
    else:
        message = failure_message(job, code)
        job.transition(Status.FAILED, frm=[Status.RUNNING], message=message, error=message)


def node_trouble(job: Job) -> str:
    """When node 0 of a job over several machines failed on its own, the
    failure of another node that may have caused it: a node that fails takes
    the others down with it, and its runner records why a moment later; a
    node whose worker died takes them down before the reconciler notices,
    so a worker silent for a few heartbeats counts as dead here."""
    if nodes.count(job) == 1:
        return ""
    heartbeat = settings.WORKER_HEARTBEAT_SECONDS
    deadline = time.monotonic() + NODE_REPORT_HEARTBEATS * heartbeat
    while time.monotonic() < deadline:
        if trouble := nodes.trouble(job, silent_seconds=(NODE_REPORT_HEARTBEATS - 1) * heartbeat):
            return trouble
        time.sleep(WAIT_POLL_SECONDS)
    return ""


def killed(job: Job, signal_name: str) -> None:
    """The job's process was killed from outside (the out-of-memory killer,
    say): requeue a kind that resumes and left its resume file, within
    ``JOB_MAX_ATTEMPTS``; fail it with the reason otherwise."""
    kind = kinds.find(job.kind)
    resume_file = kind.resume_file if kind else ""
    attempts = settings.JOB_MAX_ATTEMPTS
    what = f"The job's process was killed by {signal_name} (not by this app; out of memory?) during attempt {job.attempt}"
    if resume_file and (job.folder / resume_file).is_file() and job.attempt < attempts:
        message = f"{what} of {attempts}; requeued to resume from its last snapshot."
        if job.transition(Status.QUEUED, frm=[Status.RUNNING], message=message, worker=""):
            enqueue(job)
        return
    if not resume_file or not (job.folder / resume_file).is_file():
        message = f"{what}, and it left nothing to resume from."
    else:
        message = f"{what}; giving up after {attempts} attempts."
    job.transition(Status.FAILED, frm=[Status.RUNNING], message=message, error=message)


def restarted(job: Job) -> None:
    """The job's process was killed on request because it had stopped
    responding: queue the job again, to resume from its last snapshot when
    its kind leaves one (a new attempt, however many it had)."""
    kind = kinds.find(job.kind)
    resume_file = kind.resume_file if kind else ""
    carry_on = ("to resume from its last snapshot" if resume_file and (job.folder / resume_file).is_file()
                else "to start again")
    message = f"Its process had stopped responding and was killed on request; queued {carry_on}."
    if job.transition(Status.QUEUED, frm=[Status.RUNNING], message=message, worker="", restart_requested=False):
        enqueue(job)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def failure_message(job: Job, code: int) -> str:
    """The job's own error event if it wrote one; else, when the disk is all
    but full, that (its error could not be written); else one sentence with
    the exception its log ends with, if any: the traceback stays in the log,
    where the page shows it. No server paths either way."""
    errors = [e for e in eventseek.tail(job.folder, FAILURE_EVENTS) if e["kind"] == eventkinds.ERROR]
    if errors:
        return shown(str(errors[-1]["data"]["message"]), job.folder)
    if diskspace.is_nearly_full(job.folder):
        return diskspace.full_message(job.folder)
    tail = tail_lines(job.folder / jobfiles.LOG, TRACEBACK_LINES)
    if any(line.startswith("Traceback") for line in tail) and (last := tail[-1].strip()):
        return (f"The job failed on an unexpected error ({last[:MAX_ERROR_CHARS]}); retry it, "
                "and if it fails the same way again, its log shows where.")
    return f"The job's process exited with code {code}; its log shows why."
