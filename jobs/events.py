"""``publish(job, kind, data)``: the one way any part of the app reports
what a job does. The event goes to the job's ``events.jsonl`` (the record)
and then to the live bus."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer import events as eventlog

from .bus import Forwarder

if TYPE_CHECKING:
    from .models import Job


def publish(job: Job, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    job.folder.mkdir(parents=True, exist_ok=True)
    event = eventlog.append(job.folder, kind, data)
    Forwarder(job.pk, job.folder).forward()
    return event
