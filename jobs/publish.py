"""``publish(job, kind, data)``: the one way any part of the app reports
what a job does. The event goes to the job's ``events.jsonl`` (the record)
and then to the live bus.

It needs of a job only its id and folder (``JobFolder``), so the job model
can import it to publish its own transitions.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Protocol

from trainer import diskspace, eventlog

from .bus import Forwarder

log = logging.getLogger(__name__)


class JobFolder(Protocol):
    """What publishing needs of a job: ``Job`` has both."""

    @property
    def pk(self) -> Any: ...

    @property
    def folder(self) -> Path: ...


def publish(job: JobFolder, kind: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Record and send the event; None when the disk is full. What the event
    reports (a status, an abort) is already in the database, which pages
    read: a change of state never fails for want of room to tell of it."""
    try:
        job.folder.mkdir(parents=True, exist_ok=True)
        event = eventlog.append(job.folder, kind, data)
    except OSError as exc:
        if not diskspace.is_full(exc):
            raise
        log.warning("job %s: its %s event was not recorded: the disk is full", job.pk, kind)
        return None
    Forwarder(job.pk, job.folder).forward()
    return event
