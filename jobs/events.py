"""``publish(job, kind, data)``: the one way any part of the app reports
what a job does. The event goes to the job's ``events.jsonl`` (the record)
and then to the live bus.

It needs of a job only its id and folder (``JobFolder``), so the job model
can import it to publish its own transitions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from trainer import events as eventlog

from .bus import Forwarder


class JobFolder(Protocol):
    """What publishing needs of a job: ``Job`` has both."""

    @property
    def pk(self) -> Any: ...

    @property
    def folder(self) -> Path: ...


def publish(job: JobFolder, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    job.folder.mkdir(parents=True, exist_ok=True)
    event = eventlog.append(job.folder, kind, data)
    Forwarder(job.pk, job.folder).forward()
    return event
