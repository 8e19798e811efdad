"""Sending schemathesis' generated requests through Django's test client, and
the property every answer of the JSON API must have: no server error, and
a refusal in the project's JSON error shape that leaves nothing behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from django.core.signals import request_finished
from django.db import close_old_connections
from django.http import HttpResponse
from django.test import Client
from schemathesis.generation.case import Case

from jobs.models import Job

BASE_URL = "http://testserver"
STREAMS = "text/event-stream"


def send(client: Client, method: str, url: str, body: bytes | str = b"", content_type: str = "",
         headers: dict[str, str] | None = None) -> HttpResponse:
    """One request as a client would put it on the wire; a streamed answer
    (server-sent events) is closed once its status is known."""
    response = client.generic(method, url, data=body, content_type=content_type, headers=headers or {})
    if response.streaming:
        # As the test client does for a response it closes itself: the
        # test's database connection stays open.
        request_finished.disconnect(close_old_connections)
        try:
            response.close()
        finally:
            request_finished.connect(close_old_connections)
    return response


def send_case(client: Client, case: Case) -> HttpResponse:
    """``case`` encoded by the ``requests`` library (multipart included), sent in process."""
    kwargs = case.as_transport_kwargs(base_url=BASE_URL)
    kwargs.pop("cookies", None)
    prepared = requests.Request(**kwargs).prepare()
    headers = {name: value for name, value in prepared.headers.items()
               if name.lower() not in ("content-type", "content-length", "cookie")}
    return send(client, prepared.method, prepared.path_url, prepared.body or b"",
                prepared.headers.get("Content-Type", ""), headers)


@dataclass
class Leftovers:
    """What a request may have made: job rows, job folders, spooled uploads."""

    jobs: set[int] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    uploads: set[str] = field(default_factory=set)

    @classmethod
    def now(cls) -> Leftovers:
        return cls(set(Job.objects.values_list("pk", flat=True)), _names(Path(settings.DATA_DIR) / "jobs"),
                   _names(Path(settings.FILE_UPLOAD_TEMP_DIR)))

    def since(self, before: Leftovers) -> Leftovers:
        return Leftovers(self.jobs - before.jobs, self.folders - before.folders, self.uploads - before.uploads)

    def __bool__(self) -> bool:
        return bool(self.jobs or self.folders or self.uploads)


def _names(folder: Path) -> set[str]:
    return {entry.name for entry in folder.iterdir()} if folder.is_dir() else set()


def problems(response: HttpResponse, made: Leftovers) -> list[str]:
    """What is wrong with an answer: a 5xx, a refusal that is not the JSON
    error shape with a message, or one that left something behind."""
    status = response.status_code
    if status >= 500:
        return [f"answered {status}: {_text(response)}"]
    if status < 400:
        return []
    found = []
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if not (isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"].strip()):
        found.append(f"answered {status} without the JSON error shape: {_text(response)}")
    elif status == 400 and not isinstance(body.get("errors", {}), dict):
        found.append(f"answered 400 with field errors that are not an object: {body}")
    if made:
        found.append(f"answered {status} but left {made}")
    return found


def _text(response: HttpResponse) -> str:
    return "(a stream)" if response.streaming else response.content[:300].decode(errors="replace")
