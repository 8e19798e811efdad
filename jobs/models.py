"""Jobs: every long piece of work, of whichever kind an app registers (``kinds``).

Status, the state machine::

    queued ──claim──> waiting ──devices leased──> running ──> done | failed | aborted
      │                  │                           │
      └──────────────────┴── abort ──> aborted       └── abort ──> aborted
    waiting | running ──worker lost──> queued (again) or failed (out of attempts)

Every change of status is a conditional UPDATE (``transition``) whose row count
is checked, so two processes never move the same job; each one is recorded as
a ``JobTransition`` and published as a ``status`` event.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models, transaction
from django.utils import timezone

from trainer import eventkinds

from .publish import publish


class Status(models.TextChoices):
    QUEUED = "queued", "Queued"
    WAITING = "waiting", "Waiting for resources"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"


TERMINAL = (Status.DONE, Status.FAILED, Status.ABORTED)
PENDING = (Status.QUEUED, Status.WAITING)
ACTIVE = (Status.QUEUED, Status.WAITING, Status.RUNNING)


class Priority(models.TextChoices):
    """Which pending jobs get devices first (``queueorder``); only staff give ``high``."""

    HIGH = "high", "High"
    NORMAL = "normal", "Normal"
    LOW = "low", "Low"


def folder_of(pk: int) -> Path:
    """The folder of job ``pk``, found without its row."""
    return settings.JOBS_DIR / str(pk)


class Job(models.Model):
    kind = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    group = models.CharField(max_length=200, blank=True, db_index=True)
    notes = models.TextField(blank=True)
    owner = models.ForeignKey(User, on_delete=models.CASCADE, related_name="jobs")
    params = models.JSONField(default=dict, blank=True)

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error = models.TextField(blank=True)
    progress = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    queued_at = models.DateTimeField(default=timezone.now)
    priority = models.CharField(max_length=6, choices=Priority.choices, default=Priority.NORMAL)
    # When staff moved the job to the front of its queue (the latest move goes first).
    front_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # What the job asked for: {"device": "cpu" | "gpu", "count": n} or
    # {"device": "gpu", "ids": [0, 2]}; and what it holds while it runs:
    # {"host": "...", "devices": ["gpu0", "gpu2"]}.
    resources = models.JSONField(default=dict, blank=True)
    held = models.JSONField(default=dict, blank=True)
    worker = models.CharField(max_length=64, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    abort_requested = models.BooleanField(default=False)
    # Set by the worker while the running job's process says nothing for too long (jobs.watchdog).
    silent_since = models.DateTimeField(null=True, blank=True)
    restart_requested = models.BooleanField(default=False)  # kill the silent process and run the job again
    # The jobs this one used that were deleted (``services.delete`` records
    # them from the deleted job's ``JobKind.dependents``):
    # [{"id": 12, "label": "Dataset", "name": "digits", "by": "alice"}].
    lost_dependencies = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind} #{self.pk})"

    @property
    def folder(self) -> Path:
        return folder_of(self.pk)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def device_class(self) -> str:
        return self.resources.get("device", "cpu")

    def can_change(self, user: Any) -> bool:
        """Only the owner or staff may rename, annotate, abort or delete."""
        return bool(user.is_authenticated and (user.is_staff or user.pk == self.owner_id))

    def transition(
        self, to: str, frm: tuple[str, ...] | list[str], message: str = "",
        expect: dict[str, Any] | None = None, confirm: Callable[[], None] | None = None, **fields: Any,
    ) -> bool:
        """Move to ``to`` if the job is still in one of ``frm`` (and matches
        ``expect``); set ``fields``; record and publish the change. Returns
        False, changing nothing, when another process moved the job first.
        ``confirm`` runs once the row is updated, before the commit: what it
        raises undoes the change and reaches the caller."""
        now = timezone.now()
        if to in TERMINAL:
            fields.setdefault("finished_at", now)
        if to == Status.DONE:
            fields.setdefault("progress", 1.0)
        with transaction.atomic():
            updated = Job.objects.filter(pk=self.pk, status__in=list(frm), **(expect or {})).update(status=to, **fields)
            if not updated:
                return False
            if confirm is not None:
                confirm()
            recorded = JobTransition.objects.create(job_id=self.pk, status=to, at=now, message=message)
        self.refresh_from_db()
        publish(self, eventkinds.STATUS, {"status": to, "message": message, "progress": self.progress,
                                          "transition": recorded.pk})
        return True

    def run_spans(self) -> list[tuple[datetime, datetime | None]]:
        """Each time the job ran, from its Running transition to the next
        one (None while it still runs): a requeued or resumed job has several."""
        spans: list[tuple[datetime, datetime | None]] = []
        for t in self.transitions.all():
            if spans and spans[-1][1] is None:
                spans[-1] = (spans[-1][0], t.at)
            if t.status == Status.RUNNING:
                spans.append((t.at, None))
        return spans

    def ended_runs_seconds(self) -> float:
        """Time spent running in the spans that have ended, every attempt counted."""
        return sum((end - start).total_seconds() for start, end in self.run_spans() if end is not None)

    def elapsed_seconds(self) -> float | None:
        """Time spent running over all attempts; None if it never ran."""
        spans = self.run_spans()
        if not spans:
            return None
        now = timezone.now()
        return sum(((end or now) - start).total_seconds() for start, end in spans)

    def history(self) -> list[JobTransition]:
        """The transitions, oldest first; each Running one carries its
        ``attempt_number`` (1, 2, … over the job's life, resumes included)."""
        transitions = list(self.transitions.all())
        attempt = 0
        for t in transitions:
            attempt += t.status == Status.RUNNING
            t.attempt_number = attempt if t.status == Status.RUNNING else None
        return transitions

    def eta_seconds(self) -> float | None:
        """Time left, extrapolated from the progress made over the time run."""
        elapsed = self.elapsed_seconds()
        if self.status != Status.RUNNING or not elapsed or self.progress <= 0.0:
            return None
        return elapsed * (1.0 - self.progress) / self.progress

    @property
    def device_count(self) -> int:
        """How many devices the job holds on each machine it runs on."""
        return len(self.resources["ids"]) if "ids" in self.resources else int(self.resources.get("count", 1))

    def lost_dependency_notices(self) -> list[str]:
        """What the job's page says of each job it used that was deleted."""
        return [f"Its {lost['label'].lower()} “{lost['name']}” (#{lost['id']}) was deleted by {lost['by']}."
                for lost in self.lost_dependencies]

    def delete_with_folder(self) -> None:
        folder = self.folder
        self.delete()
        shutil.rmtree(folder, ignore_errors=True)


# The largest id a job can have: an INTEGER of SQLite or a bigint of PostgreSQL.
LARGEST_ID = 2**63 - 1


def job_of_kind(pk: Any, kind: str) -> Job | None:
    """Job ``pk`` when it is a ``kind``; None for anything else (a job of
    another kind, an id of no job, a value that is no id). One statement
    written out, not built by the ORM: building the select of a job's
    twenty-odd columns took seven times as long as running it (in one
    process, alternated: 1.08 ms against 0.14 ms at best; see
    docs/benchmarks.md, "Using a model"), and Classify one asks for its
    model with every image."""
    if not isinstance(pk, int) or isinstance(pk, bool) or not 0 < pk <= LARGEST_ID:
        return None
    return next(iter(Job.objects.raw(_job_of_kind(), [pk, kind])), None)


@cache
def _job_of_kind() -> str:
    meta = Job._meta
    return (f"SELECT * FROM {meta.db_table} WHERE {meta.pk.column} = %s "
            f"AND {meta.get_field('kind').column} = %s")


class JobNode(models.Model):
    """One of the other nodes of a job run over several machines (``jobs.nodes``):
    node 0 is the job itself, run by the worker that claimed it; nodes 1 to
    N-1 of each attempt are rows here, each claimed by a conditional UPDATE by
    a worker that runs no other part of the job. Statuses as a job's:
    queued, waiting (claimed, leasing devices), running, then done, failed
    or aborted."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="nodes")
    attempt = models.PositiveIntegerField()
    rank = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    worker = models.CharField(max_length=64, blank=True)
    # What the node holds while it runs: {"host": ..., "devices": [...], "nodes": {...}}, as Job.held.
    held = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["job", "attempt", "rank"]
        constraints = [models.UniqueConstraint(fields=["job", "attempt", "rank"], name="one_row_per_node")]

    def move(self, to: str, frm: tuple[str, ...] | list[str], **fields: Any) -> bool:
        """Move to ``to`` if still in one of ``frm``: True for one caller only."""
        return bool(JobNode.objects.filter(pk=self.pk, status__in=list(frm)).update(status=to, **fields))


class JobTransition(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="transitions")
    status = models.CharField(max_length=10, choices=Status.choices)
    at = models.DateTimeField(default=timezone.now)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]


class Worker(models.Model):
    """A running Celery worker process. ``id`` is new at every start, so a
    restarted worker is never mistaken for the one that held a job before."""

    id = models.CharField(primary_key=True, max_length=64)
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(default=list)
    # [{"id": "gpu0", "kind": "gpu", "index": 0, "name": ..., "memory_used": ...}, ...]
    devices = models.JSONField(default=list)
    # Where the app keeps its files (DATA_DIR): {"free": bytes, "total": bytes}.
    disk = models.JSONField(default=dict)
    started_at = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["hostname", "started_at"]

    def __str__(self) -> str:
        return f"{self.hostname} ({self.id[:8]})"

    @classmethod
    def alive(cls) -> models.QuerySet[Worker]:
        cutoff = timezone.now() - timezone.timedelta(seconds=settings.WORKER_DEAD_AFTER_SECONDS)
        return cls.objects.filter(last_seen__gte=cutoff)


class DeviceLimit(models.Model):
    """How many devices of one class (GPUs, or CPU slots) a user may hold at
    once, set by staff; a user without a row has ``DEVICE_LIMIT_PER_USER``.
    0: no limit."""

    user = models.OneToOneField(User, on_delete=models.CASCADE, related_name="device_limit")
    limit = models.PositiveIntegerField()

    @classmethod
    def of(cls, user_id: int) -> int:
        row = cls.objects.filter(user_id=user_id).values_list("limit", flat=True).first()
        return settings.DEVICE_LIMIT_PER_USER if row is None else row
