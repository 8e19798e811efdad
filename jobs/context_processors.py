"""What every page's scripts read from the page rather than spell themselves."""

from typing import Any

from django.http import HttpRequest

from jobs.models import TERMINAL, Status


def job_statuses(request: HttpRequest) -> dict[str, Any]:
    """The statuses' labels and which statuses are final, for ``format.js``."""
    return {"job_statuses": {"labels": dict(Status.choices), "terminal": list(TERMINAL)}}
